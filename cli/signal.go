package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// interruptible returns a context cancelled by the first SIGINT or SIGTERM, for the
// commands that run long (train, eval, sample) to stop cleanly. Once it is cancelled the
// signals get their default action back, so a second Ctrl-C ends the process at once.
func interruptible() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}
