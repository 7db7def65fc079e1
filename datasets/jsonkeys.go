package datasets

import "github.com/locusml/locus/internal/jsonkeys"

// The saved types of this package were written with Go field names ("SeqLen") before
// their keys became snake_case ("seq_len"); they read both, so that checkpoints and run
// files of earlier versions load.

func init() {
	jsonkeys.Register[TaskConfig]()
	jsonkeys.Register[StreamState]()
	jsonkeys.Register[IteratorState]()
}

// UnmarshalJSON reads a TaskConfig, its keys snake_case or, from older files, Go
// field names; an unknown key is an error.
func (c *TaskConfig) UnmarshalJSON(b []byte) error {
	type plain TaskConfig
	return jsonkeys.Unmarshal(b, (*plain)(c))
}

// UnmarshalJSON reads a StreamState, its keys snake_case or, from older checkpoints,
// Go field names; an unknown key is an error.
func (s *StreamState) UnmarshalJSON(b []byte) error {
	type plain StreamState
	return jsonkeys.Unmarshal(b, (*plain)(s))
}

// UnmarshalJSON reads an IteratorState, its keys snake_case or, from older
// checkpoints, Go field names; an unknown key is an error.
func (s *IteratorState) UnmarshalJSON(b []byte) error {
	type plain IteratorState
	return jsonkeys.Unmarshal(b, (*plain)(s))
}
