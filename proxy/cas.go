package proxy

import (
	"errors"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// The compare-and-delete and compare-and-set commands of Redis 8.4
// (DELEX, DIGEST, SET ... IFEQ|IFNE|IFDEQ|IFDNE) and Valkey (DELIFEQ, SET
// ... IFEQ), served as the lock operations they are: a compare-and-delete
// of the caller's token is a release, a compare-and-set of the token to
// itself with a TTL is an extend. The conditions that would delete or
// overwrite a lock held under another token are refused.

// DELEX key [IFEQ token | IFNE value | IFDEQ digest | IFDNE digest]
func (s *Server) delex(r *request) (resp.Reply, error) {
	switch {
	case len(r.args) == 2:
		r.op = 0
		return s.del(r) // Redis: DEL; here under DEL's rules (allow_force_del)
	case len(r.args) != 4:
		return resp.Reply{}, withArgs(errArity, "delex")
	}
	if err := reservedKeys(r.args[1:2]); err != nil {
		return resp.Reply{}, err
	}
	key, match := string(r.args[1]), r.args[3]
	switch cond := ascii.Upper(r.args[2]); cond {
	case "IFEQ":
		return s.releaseIfEqual(r, key, string(match), errStringType)
	case "IFDEQ":
		if len(match) != 16 {
			// Redis finds a missing key, or one of another type, first.
			return s.beforeCondition(r, resp.Int(0), errStringType, resp.ErrDigestLength)
		}
		return s.releaseIfDigest(r, key, match)
	case "IFNE", "IFDNE":
		return resp.Reply{}, withArgs(errDelexNotEqual, cond)
	}
	return s.beforeCondition(r, resp.Int(0), errStringType, errDelexCondition)
}

// DELIFEQ key token
func (s *Server) delifeq(r *request) (resp.Reply, error) {
	if err := reservedKeys(r.args[1:2]); err != nil {
		return resp.Reply{}, err
	}
	return s.releaseIfEqual(r, string(r.args[1]), string(r.args[2]), errWrongType)
}

// releaseIfEqual releases key if a quorum holds it with token: 1 if it
// did, 0 if the key was missing or held under another token.
func (s *Server) releaseIfEqual(r *request, key, token string, wrongType error) (resp.Reply, error) {
	rel, err := s.e.Release(r.ctx, quorum.Lock{Keys: []string{key}, Token: token})
	if err != nil {
		return resp.Reply{}, s.orWrongType(r, key, err, wrongType)
	}
	return resp.Int(int64(rel.Keys)), nil
}

// releaseIfDigest releases key if the token a quorum holds it with has
// the given digest. The release itself compares the token on each node,
// so a key taken again between the read and the release is left alone.
func (s *Server) releaseIfDigest(r *request, key string, digest []byte) (resp.Reply, error) {
	return s.read(r, r.args[1], resp.Int(0), errStringType, func(st quorum.State) (resp.Reply, error) {
		if ok, _ := resp.DigestMatches(digest, st.Token); !ok {
			return resp.Int(0), nil
		}
		return s.releaseIfEqual(r, key, st.Token, errStringType)
	})
}

// beforeCondition answers a command whose condition is bad as Redis
// does, which looks at the key first: missing if no quorum holds it,
// wrongType if it is not a string, else bad.
func (s *Server) beforeCondition(r *request, missing resp.Reply, wrongType, bad error) (resp.Reply, error) {
	return s.read(r, r.args[1], missing, wrongType, func(quorum.State) (resp.Reply, error) {
		return resp.Reply{}, bad
	})
}

// orWrongType is the error of a release or extend that no quorum
// decided. The node scripts fail on a key of another type (a Redisson
// hash), so a quorum's read of the key tells Redis's type error apart
// from an outage.
func (s *Server) orWrongType(r *request, key string, err error, wrongType error) error {
	if errors.Is(err, quorum.ErrUnavailable) {
		if st, ierr := s.e.Inspect(r.ctx, key); ierr == nil && st.Held && st.Type != "" {
			return wrongType
		}
	}
	return err
}

// DIGEST key
func (s *Server) digest(r *request) (resp.Reply, error) {
	return s.read(r, r.args[1], resp.Null(), errWrongType, func(st quorum.State) (resp.Reply, error) {
		return resp.Bulk(resp.Digest(st.Token)), nil
	})
}

// SET key token IFEQ token PX milliseconds [GET] (or IFDEQ digest-of-token)
//
// setIf serves a SET with a condition: the compare-and-set of the
// token to itself is an extend. A condition that would give the key
// another token, or set it over another holder's, is refused.
func (s *Server) setIf(r *request, a resp.SetArgs, l quorum.Lock, ttl time.Duration) (resp.Reply, error) {
	switch a.Cond {
	case resp.IFNE, resp.IFDNE:
		return resp.Reply{}, withArgs(errSetNotEqual, condName[a.Cond])
	case resp.IFDEQ:
		ok, err := resp.DigestMatches([]byte(a.Match), a.Token)
		if err != nil {
			// Redis finds a missing key, or one of another type, first.
			return s.beforeCondition(r, resp.Null(), errWrongType, err)
		}
		if !ok {
			return resp.Reply{}, errNewToken
		}
	case resp.IFEQ:
		if a.Match != a.Token {
			return resp.Reply{}, errNewToken
		}
	}
	lease, err := s.e.Extend(r.ctx, l, ttl)
	err = s.extended(lease, err)
	switch {
	case err == nil && a.Get:
		return resp.Bulk(a.Token), nil // the old value: the token itself
	case err == nil:
		return resp.OK(), nil
	case errors.Is(err, quorum.ErrDenied) && a.Get:
		return s.heldByOther(r, a.Key, a.Token), nil
	case errors.Is(err, quorum.ErrDenied):
		return resp.Null(), nil
	}
	return resp.Reply{}, s.orWrongType(r, a.Key, err, errWrongType)
}

// heldByOther is a denied SET IFEQ GET's reply. Redis replies with the
// old value whatever the condition; here, the token a quorum reads after
// the denial if it is another's, else nil, as if the key were missing:
// never the caller's own token, which would read as a granted extend.
func (s *Server) heldByOther(r *request, key, token string) resp.Reply {
	st, err := s.e.Inspect(r.ctx, key)
	if err != nil || !st.Held || st.Type != "" || st.Token == token {
		return resp.Null()
	}
	return resp.Bulk(st.Token)
}

var condName = map[resp.Condition]string{resp.IFEQ: "IFEQ", resp.IFNE: "IFNE", resp.IFDEQ: "IFDEQ", resp.IFDNE: "IFDNE"}
