package drain

// Summary is the JSON object `scan reconcile --sqs` ends with: the
// summary of `scan reconcile` (reconcile.Result.Summary) with, under
// "sqs", what the queue gave and kept.
func (r Result) Summary(format string) map[string]any {
	sum := r.Result.Summary(format)
	sum["sqs"] = map[string]any{"receives": r.Receives, "received": r.Received, "deleted": r.Deleted,
		"kept": r.Kept, "delete_failed": r.DeleteFailed, "stop": r.Stop}
	return sum
}
