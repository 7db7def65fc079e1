package transformer

import (
	"strings"
	"testing"

	"github.com/locusml/locus/datasets"
)

// TestDataConfigCorpusFieldsNeedCharLM: the corpus fields of a toy task's data
// configuration, which the task would ignore, are refused with the field names (a
// hand-edited checkpoint or run file with seq_len -1 once trained silently).
func TestDataConfigCorpusFieldsNeedCharLM(t *testing.T) {
	base := DataConfig{Task: "reverse", TaskConfig: datasets.TaskConfig{SeqLen: 8}, Batch: 4}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*DataConfig){
		"seq_len -1":    func(d *DataConfig) { d.SeqLen = -1 },
		"seq_len max":   func(d *DataConfig) { d.SeqLen = int(^uint(0) >> 1) },
		"corpus":        func(d *DataConfig) { d.Corpus = "x.txt" },
		"max_bytes":     func(d *DataConfig) { d.MaxBytes = 10 },
		"vocab":         func(d *DataConfig) { d.Vocab = "ab" },
		"corpus_sha256": func(d *DataConfig) { d.CorpusSHA256 = "00" },
	} {
		d := base
		edit(&d)
		err := d.Validate()
		if err == nil || !strings.Contains(err.Error(), "are for task charlm") {
			t.Errorf("%s: %v, want an error saying the field is for charlm", name, err)
		}
		if _, err := d.Open(); err == nil {
			t.Errorf("%s: Open accepted it", name)
		}
	}
}
