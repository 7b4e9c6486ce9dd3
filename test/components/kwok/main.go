// KWOK's controller as its release builds it (sigs.k8s.io/kwok cmd/kwok): the global --config and logging flags,
// then its own command, run until SIGTERM. Without a --config it plays the stages kwokctl gives its clusters (KWOK's
// own: node-initialize, node-heartbeat-with-lease, pod-ready, pod-complete, pod-delete), so that the tests carry no
// copy of them.
package main

import (
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeatwithlease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/cmd"
	"sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/signals"
)

var defaultStages = []string{
	nodefast.DefaultNodeInit,
	nodeheartbeatwithlease.DefaultNodeHeartbeatWithLease,
	podfast.DefaultPodReady,
	podfast.DefaultPodComplete,
	podfast.DefaultPodDelete,
}

// withDefaultStages writes the default stages to a file and names it as --config; the returned cleanup removes it
// once the configuration is loaded.
func withDefaultStages() (func(), error) {
	if slices.ContainsFunc(os.Args[1:], func(a string) bool {
		return a == "-c" || a == "--config" || strings.HasPrefix(a, "--config=")
	}) {
		return func() {}, nil
	}
	f, err := os.CreateTemp("", "kwok-stages-*.yaml")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(defaultStages, "\n---\n")); err != nil {
		return nil, err
	}
	os.Args = slices.Insert(os.Args, 1, "--config="+f.Name())
	return func() { _ = os.Remove(f.Name()) }, nil
}

func main() {
	flags := pflag.NewFlagSet("global", pflag.ContinueOnError)
	flags.ParseErrorsAllowlist.UnknownFlags = true
	flags.Usage = func() {}

	ctx, logger := log.InitFlags(signals.SetupSignalContext(), flags)
	cleanup, err := withDefaultStages()
	if err != nil {
		logger.Error("Write default stages", "err", err)
		os.Exit(1)
	}
	ctx, err = config.InitFlags(ctx, flags)
	cleanup()
	if err != nil {
		logger.Error("Init config flags", "err", err)
		os.Exit(1)
	}

	command := cmd.NewCommand(ctx)
	command.PersistentFlags().AddFlagSet(flags)
	if err := command.ExecuteContext(ctx); err != nil {
		logger.Error("Execute exit", "err", err)
		os.Exit(1)
	}
}
