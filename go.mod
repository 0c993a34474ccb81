module github.com/redlock-proxy/redlock-proxy

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/Shopify/toxiproxy/v2 v2.12.0
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/bsm/redislock v0.10.0
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/gomodule/redigo v1.9.3
	github.com/hashicorp/go-multierror v1.1.1
	github.com/prometheus/client_golang v1.21.1
	github.com/prometheus/client_model v0.6.1
	github.com/prometheus/common v0.62.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/redis/rueidis/rueidiscompat v1.0.79
	github.com/rs/zerolog v1.33.0
	github.com/tidwall/redcon v1.6.2
	github.com/yuin/gopher-lua v1.1.1
	github.com/zeebo/xxh3 v1.1.0
	go.yaml.in/yaml/v3 v3.0.5
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gorilla/mux v1.8.1 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/klauspost/compress v1.17.11 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/procfs v0.15.1 // indirect
	github.com/rs/xid v1.5.0 // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.1 // indirect
	gopkg.in/tomb.v1 v1.0.0-20141024135613-dd632973f1e7 // indirect
)
