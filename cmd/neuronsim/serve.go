package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
)

// remoteSystem is a connection to a `neuronsim serve` and its devices.
type remoteSystem struct {
	client    *remote.Client
	devs      []ndl.Device
	connected [][]int
	indices   []int
}

func (r *remoteSystem) close() { r.client.Close() }

// openRemoteSystem dials a server and opens every device it exports.
func openRemoteSystem(addr string) (*remoteSystem, error) {
	c, err := remote.Dial(addr, remote.ClientOptions{})
	if err != nil {
		return nil, err
	}
	r := &remoteSystem{client: c}
	for _, info := range c.Devices() {
		d, err := c.Device(info.Index)
		if err != nil {
			c.Close()
			return nil, err
		}
		r.devs = append(r.devs, d)
		r.connected = append(r.connected, info.Connected)
		r.indices = append(r.indices, info.Index)
	}
	return r, nil
}

func newServeCommand() *cobra.Command {
	var listen, system string
	var allowRemote bool
	cmd := &cobra.Command{
		Use:   "serve --listen unix:PATH|tcp:127.0.0.1:PORT [system flags | --system SPEC]",
		Short: "Expose the devices of a simulated system to remote runtimes",
		Long: "serve powers on a simulated system and serves its devices over the neuronsim remote\n" +
			"protocol (docs/remote-protocol.md) until interrupted. Clients are `neuronsim ls --remote`,\n" +
			"`csr`, `dma copy`, `dve load` and `exec` with --remote, and the runtime's remote backend.\n" +
			"A TCP listener must be on a loopback address unless --allow-remote is given: the\n" +
			"protocol has no authentication.",
		Example: "  neuronsim serve --listen unix:/tmp/neuronsim.sock --arch trn2 --devices 16\n" +
			"  neuronsim serve --listen tcp:127.0.0.1:7777 --system arch=mariana,devices=32,switch=v1,revision=emu",
		Args: cobra.NoArgs,
	}
	sf := addSystemFlags(cmd)
	cmd.Flags().StringVar(&listen, "listen", "", "`ADDR` to listen on: unix:PATH or tcp:HOST:PORT")
	cmd.Flags().StringVar(&system, "system", "", "system spec key=value,...: arch, devices, switch, revision (overrides the flags)")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow a TCP listener on a non-loopback address")
	_ = cmd.MarkFlagRequired("listen")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if system != "" {
			if err := sf.parseSystemSpec(system); err != nil {
				return err
			}
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serveSystem(ctx, cmd, sf, listen, allowRemote)
	}
	return cmd
}

// serveSystem builds the system and serves it until ctx ends.
func serveSystem(ctx context.Context, cmd *cobra.Command, sf *systemFlags, listen string, allowRemote bool) error {
	s, err := sf.spec()
	if err != nil {
		return err
	}
	sys, err := buildSystem(s)
	if err != nil {
		return err
	}
	exports := make([]remote.Export, len(sys))
	for i, d := range sys {
		exports[i] = remote.Export{Device: d.Dev, Name: d.Dev.Config().Name, Connected: d.Connected}
	}
	srv, err := remote.NewServer(exports, remote.ServerOptions{WriteTimeout: 30 * time.Second, Logf: func(format string, args ...any) {
		fmt.Fprintf(cmd.ErrOrStderr(), "neuronsim serve: "+format+"\n", args...)
	}})
	if err != nil {
		return err
	}
	l, err := remote.Listen(listen, allowRemote)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "serving %s (switch %s, revision %#02x) on %s\n",
		units.Plural(int64(s.Devices), "simulated "+s.Gen.Product()+" device", "simulated "+s.Gen.Product()+" devices"), s.Switch, s.Revision, listen)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		if err := srv.Close(); err != nil {
			return err
		}
		return <-done
	case err := <-done:
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
}
