# The lock code a Ruby user writes with redis-rb (Debian ruby-redis 4.8):
# SET NX PX to acquire, a compare-and-delete script (EVAL, then EVALSHA
# after SCRIPT LOAD) to release, a compare-and-pexpire script to extend,
# and the WATCH/MULTI release; plus redis-rb's handshake (CLIENT SETNAME
# from :id) and its reconnect, after a close and after the server closed
# an idle connection. The same script runs against one redis-server and
# through redlock-proxy; the test compares what it prints.
#
# Usage: ruby rblock.rb HOST PORT KEY IDLE_SECONDS [DRIVER]
# (IDLE_SECONDS: the server's idle timeout, 0 for none. DRIVER: ruby, the
# default, or hiredis: redis-rb over Debian ruby-hiredis's reader.)
# Prints "ok <check>" or "FAIL <check>: <why>" per check; exits 1 if any
# check failed, 2 if the script itself broke.

require 'redis'
require 'securerandom'

RELEASE = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end'
EXTEND = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end'

$failures = 0
def check(name, cond, why = '')
  if cond
    puts "ok #{name}"
  else
    $failures += 1
    puts "FAIL #{name}: #{why}"
  end
  $stdout.flush
end

begin
  host, port, key, idle, driver = ARGV
  port = Integer(port)
  idle = Float(idle)
  driver = (driver || 'ruby').to_sym
  require 'redis/connection/hiredis' if driver == :hiredis
  redis = Redis.new(host: host, port: port, id: 'rb-locker', timeout: 5, driver: driver)
  other = Redis.new(host: host, port: port, timeout: 5, driver: driver)
  check("driver #{driver}", redis._client.driver.name.downcase.include?(driver.to_s), redis._client.driver.name)

  # Handshake: :id is sent as CLIENT SETNAME on connect.
  check('ping', redis.ping == 'PONG')
  check('client setname from :id', redis.call(:client, :getname) == 'rb-locker')

  token = SecureRandom.hex(16)
  check('acquire', redis.set(key, token, nx: true, px: 5000) == true)
  check('get shows the token', redis.get(key) == token)
  pttl = redis.pttl(key)
  check('pttl within the ttl', pttl > 0 && pttl <= 5000, pttl.inspect)
  check('exists?', redis.exists?(key) == true)
  check('contended acquire is false', other.set(key, 'other', nx: true, px: 5000) == false)
  check('contended acquire with ex is false', other.set(key, 'other', nx: true, ex: 5) == false)

  n = redis.eval(EXTEND, keys: [key], argv: [token, 10_000])
  pttl = redis.pttl(key)
  check('extend', n == 1 && pttl > 5000 && pttl <= 10_000, "#{n.inspect} #{pttl.inspect}")
  check('extend by a non-owner is 0', other.eval(EXTEND, keys: [key], argv: ['other', 20_000]) == 0)
  check('release by a non-owner is 0', other.eval(RELEASE, [key], ['other']) == 0 && redis.get(key) == token)

  sha = redis.script(:load, RELEASE)
  check('script load returns the sha1', sha == Digest::SHA1.hexdigest(RELEASE), sha.inspect)
  check('script exists', redis.script(:exists, sha) == true)
  check('release with evalsha', redis.evalsha(sha, keys: [key], argv: [token]) == 1)
  check('free after release', redis.get(key).nil? && redis.exists?(key) == false && redis.pttl(key) == -2)
  check('stale release is 0', redis.evalsha(sha, keys: [key], argv: [token]) == 0)
  check('stale extend is 0', redis.eval(EXTEND, keys: [key], argv: [token, 5000]) == 0 && redis.exists?(key) == false)

  # The optimistic release and extend: WATCH, GET, and MULTI only when
  # the token still holds the key.
  release_watched = lambda do |r, t|
    r.watch(key) do
      if r.get(key) == t
        r.multi { |m| m.del(key) }
      else
        r.unwatch
        nil
      end
    end
  end
  token = SecureRandom.hex(16)
  check('acquire again', redis.set(key, token, nx: true, px: 5000) == true)
  res = redis.watch(key) do
    redis.get(key) == token ? redis.multi { |m| m.pexpire(key, 8000) } : redis.unwatch
  end
  pttl = redis.pttl(key)
  check('watch/multi pexpire extends', res == [true] && pttl > 5000 && pttl <= 8000, "#{res.inspect} #{pttl.inspect}")
  check('watch/multi release by a non-owner does nothing', release_watched.call(other, 'other').nil? && redis.get(key) == token)
  check('watch/multi release', release_watched.call(redis, token) == [1] && redis.exists?(key) == false)

  # Blocking acquire, as a user loops it: another holder's short lock
  # expires, and the loop gets the key.
  check('other holds a short lock', other.set(key, 'other', nx: true, px: 700) == true)
  token = SecureRandom.hex(16)
  t0 = Time.now
  got = false
  until got || Time.now - t0 > 10
    got = redis.set(key, token, nx: true, px: 5000)
    sleep 0.05 unless got
  end
  waited = Time.now - t0
  check('blocking acquire gets the key after the expiry', got && waited > 0.3, format('%s after %.2fs', got, waited))

  # Reconnect: after a close the next command dials again (and names the
  # connection again); the lock lives on.
  id1 = redis.call(:client, :id)
  redis.close
  check('command after close reconnects', redis.get(key) == token && redis.call(:client, :id) != id1)
  check('name set again on reconnect', redis.call(:client, :getname) == 'rb-locker')

  # The server closes the idle connection; redis-rb's reconnect_attempts
  # retries the next command on a new one.
  if idle > 0
    id1 = redis.call(:client, :id)
    conn = redis._client.connection
    # The Ruby driver's socket, or hiredis's (its reader's own sock).
    sock = driver == :hiredis ? conn.instance_variable_get(:@connection).sock : conn.instance_variable_get(:@sock)
    closed = IO.select([sock], nil, nil, idle + 10)
    check('server closes the idle connection', !closed.nil?)
    check('command after the server closed reconnects', redis.get(key) == token && redis.call(:client, :id) != id1)
  end
  check('release after reconnect', redis.eval(RELEASE, keys: [key], argv: [token]) == 1 && other.exists?(key) == false)
rescue StandardError => e
  puts "BROKE #{e.class}: #{e.message}"
  puts e.backtrace.first(3)
  exit 2
end
exit($failures > 0 ? 1 : 0)
