// Command dae_mnist trains denoising autoencoders on MNIST with the reference recipe of
// the PyTorch peer's "dae" workload and compares them with the lazy DAE:
//
//   - the MLP DAE 784-256-64-256-784 (PyTorch nn.Linear init), 3 epochs of batch 128
//     reshuffled each epoch, last partial batch kept, Adam 1e-3, Gaussian noise σ = 0.3
//     (not clipped), MSE loss, trained with train.Loop on dae.NewData;
//   - the localized DAE (kernel attention over learned prototypes), same recipe;
//   - the lazy DAE, the Gaussian local mean of the 60000 training images at σ, no training.
//
// For each it prints the clean-input and noisy-input test MSE over the test images and
// the wall time, and writes a PNG grid of clean / noisy / denoised test digits. It exits
// with status 1 unless every model's noisy-input MSE is below half that of predicting the
// mean training image (which ignores the input).
//
//	go run ./examples/dae_mnist -out /tmp/dae
//	go run ./examples/dae_mnist -train-n 16000 -test-n 200 -epochs 1 -batch 64 -lr 3e-3 -out /tmp/dae  # the test's short run
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// options are the example's settings (its flags).
type options struct {
	models        []string
	epochs, batch int
	lr, sigma     float64
	seed          uint64
	trainN, testN int // images used (0: all)
	lazyN         int // test images for the lazy DAE (0: testN)
	outDir        string
	grid          int
	double        bool
	stdout        io.Writer
}

// result is one model's test MSE against the clean images, for clean and noisy inputs.
type result struct {
	kind         string
	testN        int
	clean, noisy float64
	wall         time.Duration
}

func main() {
	var (
		models    = flag.String("models", "dae,ldae,lazy", "comma-separated: dae (MLP), ldae (localized), lazy")
		epochs    = flag.Int("epochs", 3, "training epochs")
		batch     = flag.Int("batch", 128, "batch size")
		lr        = flag.Float64("lr", 1e-3, "Adam learning rate")
		sigma     = flag.Float64("sigma", 0.3, "Gaussian noise standard deviation (training and test)")
		seed      = flag.Uint64("seed", 0, "seed of the parameters; data and noise use seed+1, test noise seed+2")
		trainN    = flag.Int("train-n", 0, "training images used (0: all 60000)")
		testN     = flag.Int("test-n", 0, "test images used (0: all 10000)")
		lazyN     = flag.Int("lazy-test", 0, "test images for the lazy DAE (0: as -test-n; the full 10000 take about 75 s on 2 cores)")
		mnistDir  = flag.String("mnist", "", "folder of the MNIST IDX files (default: the GoMNIST module cache)")
		outDir    = flag.String("out", ".", "folder for the PNG grids")
		gridCount = flag.Int("grid", 16, "test digits in each PNG grid")
		double    = flag.Bool("float64", false, "train in float64 instead of float32")
	)
	flag.Parse()
	log.SetFlags(0)

	dir := *mnistDir
	if dir == "" {
		var err error
		if dir, err = datasets.DefaultMNISTDir(); err != nil {
			log.Fatal(err)
		}
	}
	data, err := datasets.LoadMNIST(dir)
	if err != nil {
		log.Fatal(err)
	}
	baseline, results, err := run(data, options{
		models: strings.Split(*models, ","), epochs: *epochs, batch: *batch, lr: *lr, sigma: *sigma, seed: *seed,
		trainN: *trainN, testN: *testN, lazyN: *lazyN, outDir: *outDir, grid: *gridCount, double: *double, stdout: os.Stdout,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("| model | test n | clean-input MSE | noisy-input MSE | wall s |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range results {
		fmt.Printf("| %-5s | %6d | %.6f | %.6f | %7.1f |\n", r.kind, r.testN, r.clean, r.noisy, r.wall.Seconds())
	}
	if err := check(baseline, results); err != nil {
		log.Fatal(err)
	}
}

// check reports whether every model denoises: its noisy-input MSE must be below half
// the MSE of predicting the mean training image, which ignores the input.
func check(baseline float64, results []result) error {
	for _, r := range results {
		if !(r.noisy < baseline/2) {
			return fmt.Errorf("%s: noisy-input MSE %.6f, want below %.6f (half the mean image's %.6f)", r.kind, r.noisy, baseline/2, baseline)
		}
	}
	return nil
}

// run trains and evaluates the models of o on data, writing a PNG grid for each, and
// returns the test MSE of predicting the mean training image and each model's result.
func run(data *datasets.MNIST, o options) (float64, []result, error) {
	data = &datasets.MNIST{Train: head(data.Train, o.trainN), Test: head(data.Test, o.testN)}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return 0, nil, err
	}
	test := data.Test.Pixels
	baseline := meanImageMSE(data)
	fmt.Fprintf(o.stdout, "MNIST: %d training, %d test images; noise gaussian sigma=%g\n", data.Train.N, data.Test.N, o.sigma)
	fmt.Fprintf(o.stdout, "predict-the-training-mean MSE on the test set: %.6f\n\n", baseline)

	var results []result
	for _, kind := range o.models {
		var d dae.Denoiser
		start := time.Now()
		testImgs := test
		switch kind {
		case "dae", "ldae":
			cfg := dae.DefaultConfig()
			if kind == "ldae" {
				cfg = dae.DefaultLocalizedConfig()
			}
			cfg.Sigma = o.sigma
			dtype := autodiff.Float32
			if o.double {
				dtype = autodiff.Float64
			}
			ps, err := autodiff.NewParams(dtype, o.seed)
			if err != nil {
				return 0, nil, err
			}
			m, err := dae.New(cfg, ps)
			if err != nil {
				return 0, nil, err
			}
			fmt.Fprintf(o.stdout, "== %s (%d parameters)\n", cfg, ps.NumElements())
			c0, n0, err := dae.Evaluate(m, test, o.sigma, o.seed+2)
			if err != nil {
				return 0, nil, err
			}
			fmt.Fprintf(o.stdout, "untrained: clean-input MSE %.6f, noisy-input MSE %.6f\n", c0, n0)
			start = time.Now()
			if err := fit(o.stdout, m, data, o.epochs, o.batch, o.lr, o.seed+1); err != nil {
				return 0, nil, err
			}
			d = m
		case "lazy":
			l, err := dae.NewLazy(data.Train.Pixels, 784, o.sigma)
			if err != nil {
				return 0, nil, err
			}
			if o.lazyN > 0 && o.lazyN < data.Test.N {
				testImgs = test[:o.lazyN*784]
			}
			fmt.Fprintf(o.stdout, "== lazy DAE: Gaussian local mean of the %d training images at sigma=%g, on %d test images\n",
				data.Train.N, o.sigma, len(testImgs)/784)
			d = l
		default:
			return 0, nil, fmt.Errorf("unknown model %q (want dae, ldae or lazy)", kind)
		}
		cleanMSE, noisyMSE, err := dae.Evaluate(d, testImgs, o.sigma, o.seed+2)
		if err != nil {
			return 0, nil, err
		}
		wall := time.Since(start)
		fmt.Fprintf(o.stdout, "test (%d images): clean-input MSE %.6f, noisy-input MSE %.6f, wall %.1f s\n",
			len(testImgs)/784, cleanMSE, noisyMSE, wall.Seconds())
		path := filepath.Join(o.outDir, "dae_mnist_"+kind+".png")
		if err := grid(d, test, min(o.grid, data.Test.N), o.sigma, o.seed+3, path); err != nil {
			return 0, nil, err
		}
		fmt.Fprintf(o.stdout, "wrote %s\n\n", path)
		results = append(results, result{kind, len(testImgs) / 784, cleanMSE, noisyMSE, wall})
	}
	return baseline, results, nil
}

// head returns the first n images of s (all of them when n is 0 or more than s has).
func head(s *datasets.Images, n int) *datasets.Images {
	if n <= 0 || n >= s.N {
		return s
	}
	d := s.Rows * s.Cols
	return &datasets.Images{Pixels: s.Pixels[:n*d], Labels: s.Labels[:n], N: n, Rows: s.Rows, Cols: s.Cols}
}

// fit trains m with train.Loop for the given epochs over the MNIST training images and
// prints one line per epoch: the mean training loss over its steps, the time per step
// and the wall time so far.
func fit(w io.Writer, m *dae.Model, data *datasets.MNIST, epochs, batch int, lr float64, seed uint64) error {
	d, err := dae.NewData(m, data.Train, batch, seed)
	if err != nil {
		return err
	}
	acfg := optim.DefaultAdamConfig()
	acfg.LR = lr
	opt, err := optim.NewAdam(optim.All(m.Params().List()), acfg)
	if err != nil {
		return err
	}
	perEpoch := d.StepsPerEpoch()
	loop := &train.Loop{Model: m.Net(), Optimizer: opt, Data: d, Steps: epochs * perEpoch, LogEvery: perEpoch}
	loop.Hooks = []train.Hook{{Every: perEpoch, Func: func(_ context.Context, p train.Progress) error {
		if p.Done {
			return nil
		}
		h := loop.History()
		r := h[len(h)-1].Metrics // this epoch's record: LogEvery is one epoch
		fmt.Fprintf(w, "epoch %d: mean train loss %.6f  (%d steps, %.2f ms per step, %.1f s)\n",
			p.Step/perEpoch, r[train.MetricLoss], perEpoch, 1e3/r[train.MetricStepsPerS], p.Elapsed.Seconds())
		if hs := m.Bandwidths(); hs != nil {
			fmt.Fprintf(w, "         bandwidths %s\n", formatBandwidths(hs))
		}
		return nil
	}}}
	_, err = loop.Run(context.Background())
	return err
}

func formatBandwidths(hs [][]float64) string {
	var b strings.Builder
	for l, h := range hs {
		fmt.Fprintf(&b, "level %d [", l)
		for i, v := range h {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%.3f", v)
		}
		b.WriteString("] ")
	}
	return b.String()
}

// meanImageMSE is the test MSE of always predicting the mean training image.
func meanImageMSE(data *datasets.MNIST) float64 {
	mean := make([]float64, 784)
	for i := range data.Train.N {
		for j, v := range data.Train.Image(i) {
			mean[j] += float64(v)
		}
	}
	var s float64
	for i := range data.Test.N {
		for j, v := range data.Test.Image(i) {
			e := float64(v) - mean[j]/float64(data.Train.N)
			s += e * e
		}
	}
	return s / float64(data.Test.N*784)
}

// grid denoises the first n test digits with fresh noise and writes the PNG.
func grid(d dae.Denoiser, test []float32, n int, sigma float64, seed uint64, path string) error {
	clean := test[:n*784]
	noisy := make([]float32, len(clean))
	dae.Gaussian{Sigma: sigma}.Corrupt(noisy, clean, datasets.NewRand(seed))
	out := make([]float32, len(clean))
	if err := d.Denoise(out, noisy); err != nil {
		return err
	}
	var c, z, o [][]float32
	for i := range n {
		c = append(c, clean[i*784:(i+1)*784])
		z = append(z, noisy[i*784:(i+1)*784])
		o = append(o, out[i*784:(i+1)*784])
	}
	return dae.WriteGrid(path, c, z, o, 2)
}
