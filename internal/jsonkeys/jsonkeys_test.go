package jsonkeys

import (
	"strings"
	"testing"
)

type inner struct {
	Depth int `json:"depth"`
}

type cfg struct {
	inner
	SeqLen int    `json:"seq_len"`
	Op     string `json:"op,omitempty"`
}

func TestUnmarshal(t *testing.T) {
	for _, in := range []string{
		`{"seq_len": 6, "op": "+", "depth": 2}`,
		`{"SeqLen": 6, "Op": "+", "Depth": 2}`, // an older file
		`{"seqlen": 6, "OP": "+", "depth": 2}`,
	} {
		var c cfg
		if err := Unmarshal([]byte(in), &c); err != nil || c.SeqLen != 6 || c.Op != "+" || c.Depth != 2 {
			t.Errorf("%s: %+v, %v", in, c, err)
		}
	}
	var c cfg
	if err := Unmarshal([]byte(`{"SeqLn": 6}`), &c); err == nil || !strings.Contains(err.Error(), `unknown field "SeqLn"`) {
		t.Errorf("a misspelt key: %v", err)
	}
	if err := Unmarshal([]byte(`null`), &c); err != nil {
		t.Errorf("null: %v", err)
	}
	if err := Unmarshal([]byte(`[1]`), &c); err == nil {
		t.Error("an array read as a struct")
	}
}
