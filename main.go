// Command redlock-proxy serves N independent Redis masters as one Redis
// lock server: unmodified single-instance lock clients connect to it, and
// it runs the Redlock algorithm across the masters.
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/app"
)

//go:embed config.toml
var defaultConfig string

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "redlock-proxy:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	o := app.Options{DefaultConfig: defaultConfig}
	fl := flag.NewFlagSet("redlock-proxy", flag.ContinueOnError)
	fl.StringVar(&o.ConfigPath, "config", "config.toml", "path of the TOML config file; without one the built-in default is used")
	listen := fl.String("listen", app.DefaultListen, "address to serve clients on (overrides listen)")
	nodes := fl.String("nodes", "", "comma-separated Redis masters host:port,... (overrides nodes)")
	probe := fl.String("probe", "", "only GET this URL, such as http://127.0.0.1:9121/readyz, and exit 0 if it answers 200 within 2s (a health check for an image without curl)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *probe != "" {
		return app.Probe(*probe, 2*time.Second)
	}
	fl.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "config":
			o.ConfigGiven = true
		case "listen":
			o.Listen = listen
		case "nodes":
			o.Nodes = nodes
		}
	})
	a, err := app.New(o)
	if err != nil {
		return err
	}
	return a.Run(context.Background())
}
