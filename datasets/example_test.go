package datasets_test

import (
	"fmt"

	"github.com/locusml/locus/datasets"
)

func ExampleTaskByName() {
	task, err := datasets.TaskByName("addition", datasets.TaskConfig{Digits: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.Name(), "vocab", task.Vocab(), "T", task.SeqLen(), "answer", task.AnswerLen())

	ex := task.Sample(datasets.NewRand(1))
	fmt.Println("checker accepts the target:", task.Check(ex, ex.Target))

	_, err = datasets.TaskByName("reverse", datasets.TaskConfig{Vocab: 1})
	fmt.Println(err)
	// Output:
	// addition vocab 13 T 12 answer 4
	// checker accepts the target: true
	// task reverse: Vocab=1 is too small (minimum 2)
}

func ExampleNewTaskStream() {
	task, _ := datasets.TaskByName("reverse", datasets.TaskConfig{})
	stream, _ := datasets.NewTaskStream(task, datasets.Aligned, 32, 1)
	b := stream.Next()
	fmt.Println(b.B, b.T, len(b.Inputs))

	saved := stream.State() // store with the checkpoint
	next := stream.Next()
	_ = stream.Restore(saved)
	again := stream.Next()
	fmt.Println("same batch after restore:", fmt.Sprint(next.Inputs) == fmt.Sprint(again.Inputs))
	// Output:
	// 32 16 512
	// same batch after restore: true
}

func ExampleIterator() {
	it, _ := datasets.NewIterator(datasets.IteratorConfig{N: 5, BatchSize: 2})
	for range 4 {
		idx, epoch := it.Next()
		fmt.Println(epoch, idx)
	}
	// Output:
	// 0 [0 1]
	// 0 [2 3]
	// 0 [4]
	// 1 [0 1]
}

func ExampleVocab() {
	v := datasets.VocabFromText([]byte("hello\n"))
	fmt.Println(v.Size(), v.String())
	ids, _ := v.Encode([]byte("hole"))
	fmt.Println(ids)
	w, _ := datasets.VocabFromString(v.String()) // as restored from a checkpoint
	text, _ := w.Decode(ids)
	fmt.Println(string(text))
	// Output:
	// 5 "\nehlo"
	// [2 4 3 1]
	// hole
}
