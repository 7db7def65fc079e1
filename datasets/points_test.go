package datasets

import (
	"math"
	"slices"
	"testing"
)

func TestBlobs(t *testing.T) {
	p, centers, err := Blobs(300, 3, 4, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.N != 300 || p.D != 3 || len(p.X) != 900 || len(p.Labels) != 300 || len(centers) != 12 {
		t.Fatalf("shape N=%d D=%d, %d coordinates, %d labels, %d centre coordinates", p.N, p.D, len(p.X), len(p.Labels), len(centers))
	}
	var count [4]int
	for i := range p.N {
		c := p.Labels[i]
		count[c]++
		var d2 float64
		for j, x := range p.Row(i) {
			d2 += (x - centers[c*3+j]) * (x - centers[c*3+j])
		}
		if math.Sqrt(d2) > 0.5*6 { // beyond 6 std in 3-D: never at this size
			t.Fatalf("point %d is %v from its centre", i, math.Sqrt(d2))
		}
	}
	if count != [4]int{75, 75, 75, 75} {
		t.Errorf("class sizes %v", count)
	}
	q, _, _ := Blobs(300, 3, 4, 0.5, 1)
	r, _, _ := Blobs(300, 3, 4, 0.5, 2)
	if !slices.Equal(p.X, q.X) || slices.Equal(p.X, r.X) {
		t.Error("blobs do not follow the seed")
	}
}

func TestMoonsAndCircles(t *testing.T) {
	m, err := Moons(101, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m.N != 101 || m.D != 2 || len(m.X) != 202 {
		t.Fatalf("moons shape %d×%d", m.N, m.D)
	}
	for i := range m.N {
		x, y := m.Row(i)[0], m.Row(i)[1]
		if m.Labels[i] == 0 {
			if math.Abs(math.Hypot(x, y)-1) > 1e-12 || y < -1e-12 {
				t.Fatalf("upper moon point %v is off the upper unit half circle", m.Row(i))
			}
		} else if math.Abs(math.Hypot(x-1, y-0.5)-1) > 1e-12 || y > 0.5+1e-12 {
			t.Fatalf("lower moon point %v is off its half circle", m.Row(i))
		}
	}
	if m.Labels[50] != 0 || m.Labels[51] != 1 {
		t.Error("the first ceil(n/2) points are not the upper moon")
	}

	c, err := Circles(100, 0, 0.3, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.N {
		want := 1.0
		if c.Labels[i] == 1 {
			want = 0.3
		}
		if r := math.Hypot(c.Row(i)[0], c.Row(i)[1]); math.Abs(r-want) > 1e-12 {
			t.Fatalf("circle point %d has radius %v, want %v", i, r, want)
		}
	}
	n1, _ := Moons(50, 0.1, 3)
	n2, _ := Moons(50, 0.1, 3)
	n3, _ := Moons(50, 0.1, 4)
	if !slices.Equal(n1.X, n2.X) || slices.Equal(n1.X, n3.X) {
		t.Error("moons noise does not follow the seed")
	}
}

func TestSwissRoll(t *testing.T) {
	p, roll, err := SwissRoll(200, 0, 9)
	if err != nil {
		t.Fatal(err)
	}
	if p.N != 200 || p.D != 3 || len(p.X) != 600 || len(roll) != 200 || p.Labels != nil {
		t.Fatalf("shape %d×%d, %d roll values", p.N, p.D, len(roll))
	}
	for i, tt := range roll {
		x := p.Row(i)
		if tt < 1.5*math.Pi || tt > 4.5*math.Pi || math.Abs(x[0]-tt*math.Cos(tt)) > 1e-12 || math.Abs(x[2]-tt*math.Sin(tt)) > 1e-12 || x[1] < 0 || x[1] > 21 {
			t.Fatalf("point %v with t=%v is not on the roll", x, tt)
		}
	}
}

func TestRegression(t *testing.T) {
	for _, name := range RegressionFuncs() {
		f, lo, hi, err := RegressionCurve(name)
		if err != nil {
			t.Fatal(err)
		}
		x, y, err := Regression(name, 100, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(x) != 100 || len(y) != 100 || !slices.IsSorted(x) || x[0] < lo || x[99] > hi {
			t.Fatalf("%s: x not sorted in [%v, %v]", name, lo, hi)
		}
		for i := range x {
			if y[i] != f(x[i]) {
				t.Fatalf("%s: noise-free y(%v) = %v, want %v", name, x[i], y[i], f(x[i]))
			}
		}
	}
	_, y1, _ := Regression("sin", 1000, 0.1, 1)
	x2, _, _ := Regression("sin", 1000, 0, 1)
	var ss float64
	for i := range y1 {
		r := y1[i] - math.Sin(x2[i])
		ss += r * r
	}
	if sd := math.Sqrt(ss / 1000); math.Abs(sd-0.1) > 0.01 {
		t.Errorf("noise standard deviation %v, want 0.1", sd)
	}
}

func TestPointsErrors(t *testing.T) {
	if _, _, err := Blobs(0, 2, 3, 1, 1); err == nil {
		t.Error("Blobs n=0: no error")
	}
	if _, _, err := Blobs(10, 2, 0, 1, 1); err == nil {
		t.Error("Blobs k=0: no error")
	}
	if _, _, err := Blobs(10, 2, 3, -1, 1); err == nil {
		t.Error("Blobs std<0: no error")
	}
	if _, err := Moons(10, math.NaN(), 1); err == nil {
		t.Error("Moons noise NaN: no error")
	}
	if _, err := Circles(10, 0, 1.5, 1); err == nil {
		t.Error("Circles factor 1.5: no error")
	}
	if _, _, err := SwissRoll(-1, 0, 1); err == nil {
		t.Error("SwissRoll n<0: no error")
	}
	if _, _, err := Regression("tan", 10, 0, 1); err == nil {
		t.Error("unknown regression function: no error")
	}
}
