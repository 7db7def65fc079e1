package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

// queryBandwidthSession is a session whose bandwidths depend on the query (the query
// and knn modes): their values on a batch of validation data.
type queryBandwidthSession interface {
	// queryBandwidths returns, by layer scope, every head's bandwidths over the queries of
	// a validation batch drawn with seed; nil when the bandwidths do not depend on the
	// query.
	queryBandwidths(m *autodiff.Model, seed uint64) (map[string][][]float64, error)
}

// probeBatch is the number of validation examples whose per-query bandwidths are measured.
const probeBatch = 16

// bandwidthObserver returns a train.Loop Observe function that records the session's
// bandwidths at every evaluation, or nil when the model has none to learn.
func bandwidthObserver(s Session, m *autodiff.Model, seed uint64) func(context.Context) (train.Metrics, error) {
	return func(context.Context) (train.Metrics, error) { return bandwidthMetrics(s, m, seed) }
}

// bandwidthMetrics returns the session's learned bandwidths as metrics
// (train.BandwidthMetrics), and for per-query bandwidths their distribution over a
// validation batch (train.BandwidthDistributionMetrics).
func bandwidthMetrics(s Session, m *autodiff.Model, seed uint64) (train.Metrics, error) {
	if qs, ok := s.(queryBandwidthSession); ok {
		per, err := qs.queryBandwidths(m, seed)
		if err != nil {
			return nil, err
		}
		if per != nil {
			return train.BandwidthDistributionMetrics(per), nil
		}
	}
	return train.BandwidthMetrics(s.Bandwidths()), nil
}

// quantiles returns the minimum, quartiles and maximum of vals.
func quantiles(vals []float64) []float64 { return train.BandwidthQuantiles(vals) }

func (s *transformerSession) queryBandwidths(m *autodiff.Model, seed uint64) (map[string][][]float64, error) {
	if s.cfg.Bandwidth != layers.BandwidthQuery && s.cfg.Bandwidth != layers.BandwidthKNN {
		return nil, nil
	}
	if s.data == nil {
		return nil, errNoData("measuring per-query bandwidths")
	}
	rng := datasets.NewRand(seed)
	var inputs map[string]*tensor.Dense
	switch {
	case s.data.Corpus != nil:
		b, err := s.data.Corpus.SampleBatch(rng, datasets.Validation, probeBatch, s.data.Config.SeqLen)
		if err != nil {
			return nil, err
		}
		inputs = transformer.TaskInputs(b)
	default:
		st, err := datasets.NewTaskStream(s.data.Task, s.data.Config.Layout, probeBatch, seed)
		if err != nil {
			return nil, err
		}
		b := st.Next()
		if s.cfg.Arch == transformer.ArchEncDec {
			if inputs, err = transformer.EncDecInputs(b, s.data.Task.Vocab()); err != nil {
				return nil, err
			}
		} else {
			inputs = transformer.TaskInputs(b)
		}
	}
	res, err := m.Run(inputs, autodiff.RunMode{Taps: true})
	if err != nil {
		return nil, err
	}
	out := map[string][][]float64{}
	for name, t := range res.Taps {
		layer, ok := strings.CutSuffix(baseTap(name), "."+layers.TapBandwidth)
		if !ok {
			continue
		}
		sh, d := t.Shape(), floats(t) // [B, H, Tq]
		heads := out[layer]
		if heads == nil {
			heads = make([][]float64, sh[1])
		}
		for b := range sh[0] {
			for h := range sh[1] {
				off := (b*sh[1] + h) * sh[2]
				heads[h] = append(heads[h], d[off:off+sh[2]]...)
			}
		}
		out[layer] = heads
	}
	return out, nil
}

// layerNumber orders layer scopes by their numbers ("blocks.10" after "blocks.9").
var layerNumber = regexp.MustCompile(`\d+`)

func naturalLess(a, b string) bool {
	pad := func(s string) string {
		return layerNumber.ReplaceAllStringFunc(s, func(n string) string { return strings.Repeat("0", max(0, 6-len(n))) + n })
	}
	return pad(a) < pad(b)
}

// printBandwidthTable prints bandwidths by layer (rows) and head (columns).
func printBandwidthTable(w io.Writer, bw map[string][]float64) {
	layersList := make([]string, 0, len(bw))
	heads := 0
	for k, v := range bw {
		layersList = append(layersList, strings.TrimSuffix(k, ".bandwidth"))
		heads = max(heads, len(v))
	}
	sort.Slice(layersList, func(i, j int) bool { return naturalLess(layersList[i], layersList[j]) })
	width := len("layer")
	for _, l := range layersList {
		width = max(width, len(l))
	}
	fmt.Fprintf(w, "  %-*s", width, "layer")
	for j := range heads {
		fmt.Fprintf(w, "  %8s", fmt.Sprintf("head %d", j))
	}
	fmt.Fprintln(w)
	for _, l := range layersList {
		fmt.Fprintf(w, "  %-*s", width, l)
		vals := bw[l+".bandwidth"]
		if len(vals) == 1 && heads > 1 {
			fmt.Fprintf(w, "  %8.4g (all heads)\n", vals[0])
			continue
		}
		for _, v := range vals {
			fmt.Fprintf(w, "  %8.4g", v)
		}
		fmt.Fprintln(w)
	}
}

// printHistogram prints a text histogram of vals in bins rows.
func printHistogram(w io.Writer, vals []float64, bins int) {
	q := quantiles(vals)
	lo, hi := q[0], q[4]
	if !(hi > lo) {
		fmt.Fprintf(w, "    all %d values %.4g\n", len(vals), lo)
		return
	}
	counts := make([]int, bins)
	for _, v := range vals {
		counts[min(bins-1, int((v-lo)/(hi-lo)*float64(bins)))]++
	}
	most := 0
	for _, c := range counts {
		most = max(most, c)
	}
	for i, c := range counts {
		a := lo + (hi-lo)*float64(i)/float64(bins)
		b := lo + (hi-lo)*float64(i+1)/float64(bins)
		fmt.Fprintf(w, "    %8.4g – %-8.4g %5d %s\n", a, b, c, strings.Repeat("█", (c*40+most-1)/most))
	}
}

// printBandwidths prints a checkpoint's bandwidths as inspect shows them: a table of
// the learned values, and for per-query bandwidths a histogram per layer and head over
// a validation batch. It is an error for a model with no bandwidth to show.
func printBandwidths(w io.Writer, ld *loaded) error {
	if qs, ok := ld.sess.(queryBandwidthSession); ok {
		per, err := qs.queryBandwidths(ld.run, exampleSeed)
		if err != nil {
			return err
		}
		if per != nil {
			names := slices.Sorted(maps.Keys(per))
			sort.Slice(names, func(i, j int) bool { return naturalLess(names[i], names[j]) })
			table := map[string][]float64{}
			for _, l := range names {
				for _, vals := range per[l] {
					table[l+".bandwidth"] = append(table[l+".bandwidth"], quantiles(vals)[2])
				}
			}
			fmt.Fprintf(w, "per-query bandwidths on %d validation examples: median by layer and head\n", probeBatch)
			printBandwidthTable(w, table)
			for _, l := range names {
				for j, vals := range per[l] {
					q := quantiles(vals)
					fmt.Fprintf(w, "  %s head %d: %d queries, min %.4g, quartiles %.4g / %.4g / %.4g, max %.4g\n", l, j, len(vals), q[0], q[1], q[2], q[3], q[4])
					printHistogram(w, vals, 8)
				}
			}
			return nil
		}
	}
	bw := ld.sess.Bandwidths()
	if len(bw) == 0 {
		return fmt.Errorf("%s: the model has no learned bandwidths (fixed bandwidth): nothing to show", ld.ck.Dir)
	}
	fmt.Fprintln(w, "learned bandwidths by layer and head:")
	printBandwidthTable(w, bw)
	return nil
}
