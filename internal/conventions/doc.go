// Package conventions holds no code: its tests check conventions that every package of
// Locus follows, over the module's source. The first is the zero convention of configs
// (stated in package optim): a zero field means its documented default, or is a setting
// its comment names, or is an error naming the field; never a silent zero that cannot
// work. Every exported config type must be in the test's table, so that a new one
// cannot forget.
package conventions
