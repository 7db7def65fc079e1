package methods_test

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/methods"
)

func ExampleNadarayaWatson() {
	x := [][]float64{{0}, {1}, {2}, {3}}
	y := [][]float64{{0}, {1}, {4}, {9}}
	pred, err := methods.NadarayaWatson(x, y, [][]float64{{1.5}}, methods.LocalMeanOptions{
		Kernel:    layers.Gaussian{},
		Bandwidth: 0.5,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.3f\n", pred[0][0])
	// Output: 2.536
}

func ExampleLocalLinear() {
	// Local linear regression reproduces a line exactly, even at the edge.
	x := [][]float64{{0}, {1}, {2}, {3}}
	y := [][]float64{{1}, {3}, {5}, {7}}
	pred, err := methods.LocalLinear(x, y, [][]float64{{3}, {4}}, methods.LocalLinearOptions{Bandwidth: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.6f %.6f\n", pred[0][0], pred[1][0])
	// Output: 7.000000 9.000000
}

func ExampleLocalFit() {
	// A constant model with squared loss: the local fit is the local mean.
	x := [][]float64{{0}, {1}, {2}}
	y := [][]float64{{1}, {2}, {6}}
	loss := func(_, y, th []float64) (float64, []float64) {
		r := th[0] - y[0]
		return r * r / 2, []float64{r}
	}
	res, err := methods.LocalFit(x, y, []float64{2}, loss, methods.LocalFitOptions{Bandwidth: 1, Init: []float64{0}, LearningRate: 0.5})
	if err != nil {
		fmt.Println(err)
		return
	}
	nw, _ := methods.NadarayaWatson(x, y, [][]float64{{2}}, methods.LocalMeanOptions{Bandwidth: 1})
	fmt.Printf("local fit %.6f, Nadaraya-Watson %.6f, converged %v\n", res.Theta[0], nw[0][0], res.Converged)
	// Output: local fit 4.218692, Nadaraya-Watson 4.218692, converged true
}

func ExampleKNNClassify() {
	x := [][]float64{{0, 0}, {0, 1}, {1, 0}, {5, 5}, {5, 6}}
	labels := []int{0, 0, 0, 1, 1}
	classes, err := methods.KNNClassify(x, labels, [][]float64{{0.5, 0.5}, {4, 4}}, methods.KNNOptions{K: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(classes)
	// Output: [0 1]
}

func ExampleMeanShift() {
	points := [][]float64{{0, 0}, {0.2, 0}, {0, 0.2}, {5, 5}, {5.2, 5}, {5, 5.2}, {5.1, 5.1}}
	res, err := methods.MeanShift(points, methods.MeanShiftOptions{Bandwidth: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range res.Centers {
		fmt.Printf("(%.3f, %.3f)\n", c[0], c[1])
	}
	fmt.Println(res.Labels)
	// Output:
	// (5.075, 5.075)
	// (0.067, 0.067)
	// [1 1 1 0 0 0 0]
}

func ExampleHopfieldBetaSweep() {
	patterns := [][]float64{{1, 0}, {0, 1}}
	states, err := methods.HopfieldBetaSweep(patterns, []float64{0.9, 0.2}, []float64{0.001, 100}, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range states {
		fmt.Printf("(%.3f, %.3f)\n", s[0], s[1])
	}
	// Output:
	// (0.500, 0.500)
	// (1.000, 0.000)
}

func ExampleHopfield() {
	net, err := methods.NewHopfield([][]float64{{1, 1, 1, 1, -1, -1, -1, -1}, {1, -1, 1, -1, 1, -1, 1, -1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	got, _ := net.Recall([]float64{1, 1, 1, -1, -1, -1, -1, -1}, 0) // one bit flipped
	fmt.Println(got)
	// Output: [1 1 1 1 -1 -1 -1 -1]
}

func ExampleLabelPropagation() {
	points := [][]float64{{0}, {0.5}, {1}, {1.5}, {10}, {10.5}, {11}}
	labels := []int{0, -1, -1, -1, 1, -1, -1}
	res, err := methods.LabelPropagation(points, labels, methods.LabelPropagationOptions{Bandwidth: 0.5})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Labels)
	// Output: [0 0 0 0 1 1 1]
}

func ExampleLocallyLinearEmbedding() {
	// Points on a circular arc unroll onto a line: the embedding is monotone
	// along the arc.
	var pts [][]float64
	for i := 0; i < 40; i++ {
		a := 2.5 * float64(i) / 39
		pts = append(pts, []float64{math.Cos(a), math.Sin(a)})
	}
	emb, err := methods.LocallyLinearEmbedding(pts, methods.LLEOptions{Neighbors: 4, Components: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	up, down := true, true
	for i := 1; i < len(emb); i++ {
		up = up && emb[i][0] > emb[i-1][0]
		down = down && emb[i][0] < emb[i-1][0]
	}
	fmt.Println("monotone:", up || down)
	// Output: monotone: true
}

func ExampleTakagiSugeno() {
	// IF temperature is cold THEN power = 100; IF warm THEN power = 20.
	rules := []methods.FuzzyRule{
		{Antecedents: []methods.Membership{methods.TriangularMembership(0, 10, 20)}, Output: []float64{100}},
		{Antecedents: []methods.Membership{methods.TriangularMembership(10, 20, 30)}, Output: []float64{20}},
	}
	power, err := methods.TakagiSugeno(rules, []float64{13})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.1f\n", power[0]) // (0.7·100 + 0.3·20) / (0.7 + 0.3)
	// Output: 76.0
}

func ExampleNonLocalMeans() {
	img := [][]float64{
		{0, 0, 0, 1, 1, 1},
		{0, 0.3, 0, 1, 1, 1},
		{0, 0, 0, 1, 0.7, 1},
	}
	out, err := methods.NonLocalMeans(img, methods.NLMeansOptions{Bandwidth: 0.2, PatchRadius: 1, SearchRadius: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.2f %.2f\n", out[1][1], out[2][4])
	// Output: 0.07 0.94
}

func ExampleReadCSV() {
	in := "x,y\n1,2\n3,4\n"
	rows, err := methods.ReadCSV(strings.NewReader(in))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rows)
	_, err = methods.ReadCSV(strings.NewReader("x,y\n1,2\n3,abc\n"))
	fmt.Println(err)
	methods.WriteCSV(os.Stdout, []string{"sum"}, [][]float64{{rows[0][0] + rows[0][1]}, {rows[1][0] + rows[1][1]}})
	// Output:
	// [[1 2] [3 4]]
	// line 3: column 2: "abc" is not a number
	// sum
	// 3
	// 7
}
