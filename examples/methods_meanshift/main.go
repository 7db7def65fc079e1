// Command methods_meanshift clusters points with MeanShift, the iterated
// self-local mean (docs/THEORY.md §7).
//
//	go run ./examples/methods_meanshift                 # three synthetic blobs
//	go run ./examples/methods_meanshift -in points.csv  # your own points
//
// It prints the cluster centres as CSV and, on stderr, the bandwidth used
// and the size of each cluster. On the synthetic blobs it exits with status 1
// unless it finds each blob's centre within 0.5 and no other cluster.
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"

	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/methods"
)

func main() {
	in := flag.String("in", "", "CSV file of points, one per row (default: synthetic blobs)")
	bandwidth := flag.Float64("bandwidth", 0, "kernel bandwidth; 0 estimates it from the data")
	quantile := flag.Float64("quantile", 0.2, "quantile for the bandwidth estimate")
	kernel := flag.String("kernel", "flat", "flat, or a layers kernel name (gaussian, ...)")
	flag.Parse()
	log.SetFlags(0)

	points, err := load(*in)
	if err != nil {
		log.Fatal(err)
	}
	opts := methods.MeanShiftOptions{Bandwidth: *bandwidth, Quantile: *quantile}
	if *kernel != "flat" {
		if opts.Kernel, err = layers.ParseKernel(*kernel); err != nil {
			log.Fatal(err)
		}
	}
	res, err := methods.MeanShift(points, opts)
	if err != nil {
		log.Fatal(err)
	}
	sizes := make([]int, len(res.Centers))
	for _, l := range res.Labels {
		sizes[l]++
	}
	fmt.Fprintf(os.Stderr, "bandwidth %.4g: %d clusters of sizes %v\n", res.Bandwidth, len(res.Centers), sizes)
	if err := methods.WriteCSV(os.Stdout, nil, res.Centers); err != nil {
		log.Fatal(err)
	}
	if *in == "" {
		if err := checkBlobs(res.Centers, 0.5); err != nil {
			log.Fatal(err)
		}
	}
}

// blobCenters are the centres of the synthetic blobs.
var blobCenters = [][2]float64{{0, 0}, {5, 5}, {-4, 6}}

// checkBlobs reports whether centers are the blobs' centres, each within tol.
func checkBlobs(centers [][]float64, tol float64) error {
	if len(centers) != len(blobCenters) {
		return fmt.Errorf("found %d clusters, want the %d blobs", len(centers), len(blobCenters))
	}
	for _, b := range blobCenters {
		best := math.Inf(1)
		for _, c := range centers {
			best = min(best, math.Hypot(c[0]-b[0], c[1]-b[1]))
		}
		if best > tol {
			return fmt.Errorf("no cluster centre within %g of the blob at %v (nearest %.3g away)", tol, b, best)
		}
	}
	return nil
}

func load(path string) ([][]float64, error) {
	if path == "" {
		rng := rand.New(rand.NewPCG(1, 2))
		var pts [][]float64
		for _, c := range blobCenters {
			for i := 0; i < 50; i++ {
				pts = append(pts, []float64{c[0] + 0.6*rng.NormFloat64(), c[1] + 0.6*rng.NormFloat64()})
			}
		}
		return pts, nil
	}
	f, _, err := regularfile.Open(path, 1<<30)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pts, err := methods.ReadCSV(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pts, nil
}
