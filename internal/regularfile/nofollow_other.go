//go:build !unix

package regularfile

// oNoFollow: without O_NOFOLLOW, OpenFile and Create rely on their Lstat checks.
const oNoFollow = 0
