package main

import "testing"

// TestParseTrainTime reads back the time line that fit prints.
func TestParseTrainTime(t *testing.T) {
	var r e2eResult
	out := "locus train: …\ndone: 10 steps in 1s\ntime: steps 12.500s, evaluation 3.250s, checkpoints and plot 0.125s, data 0.010s, other 0.020s\n"
	if err := parseTrainTime(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.StepsS != 12.5 || r.EvalS != 3.25 || r.CheckpointS != 0.125 || r.DataS != 0.01 || r.OtherS != 0.02 {
		t.Errorf("parsed %+v", r)
	}
	if err := parseTrainTime("done\n", &r); err == nil {
		t.Error("no error without a time line")
	}
}
