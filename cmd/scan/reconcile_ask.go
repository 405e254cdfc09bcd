package main

import "context"

// reconcileAsk is `scan reconcile --ask PROVIDER`.
func reconcileAsk(ctx context.Context, e *env, src *reconcileSources, by string) error {
	_, _, _ = ctx, e, by
	return usagef("--ask", "%q: not available yet", src.ask)
}
