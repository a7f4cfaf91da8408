package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// undirected returns the links of an undirected graph of n devices with
// the given edges, both ways.
func undirected(n int, edges [][2]int) [][]int {
	links := make([][]int, n)
	for _, e := range edges {
		links[e[0]] = append(links[e[0]], e[1])
		links[e[1]] = append(links[e[1]], e[0])
	}
	return links
}

// grid4 is the 4×4 grid of devices 4·row + column, without the torus's
// wrap-around links.
func grid4() [][2]int {
	var edges [][2]int
	for d := range 16 {
		if d%4 < 3 {
			edges = append(edges, [2]int{d, d + 1})
		}
		if d < 12 {
			edges = append(edges, [2]int{d, d + 4})
		}
	}
	return edges
}

// TestDeviceCycle: deviceCycle finds a cycle along the links where one
// exists — the boustrophedon on the torus at once, one after backing up
// on the 4×4 grid without wrap-around, whose boustrophedon does not close
// — and says why there is none: a device of one link, devices with no
// path between them, or (the Petersen graph, 3 links a device and no
// cycle through all ten) none found.
func TestDeviceCycle(t *testing.T) {
	petersen := [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}, {0, 5}, {1, 6}, {2, 7}, {3, 8}, {4, 9}, {5, 7}, {7, 9}, {9, 6}, {6, 8}, {8, 5}}
	torus := grid4()
	for r := range 4 {
		torus = append(torus, [2]int{4 * r, 4*r + 3}, [2]int{r, r + 12})
	}
	for _, tc := range []struct {
		name  string
		links [][]int
		want  []int  // the cycle; nil: check only that it is one
		err   string // the reason there is none
	}{
		{"one device", [][]int{nil}, []int{0}, ""},
		{"two devices", undirected(2, [][2]int{{0, 1}}), []int{0, 1}, ""},
		{"ring of 5", undirected(5, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}}), []int{0, 1, 2, 3, 4}, ""},
		{"torus 4×4", undirected(16, torus), []int{0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12}, ""},
		{"grid 4×4", undirected(16, grid4()), nil, ""},
		{"chain of 6", undirected(6, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}), nil, "device 0 has 1 link"},
		{"two rings", undirected(6, [][2]int{{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}}), nil, "device 0 reaches 3 of the 6 devices"},
		{"lone device", [][]int{{1}, {0}, nil}, nil, "device 0 has 1 link"},
		{"petersen", undirected(10, petersen), nil, "no path through every device closes on device 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := deviceCycle(tc.links)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			if tc.want != nil {
				assert.Equal(t, tc.want, got)
			}
			require.Len(t, got, len(tc.links))
			seen := map[int]bool{}
			for k, d := range got {
				seen[d] = true
				if len(got) > 1 {
					assert.Contains(t, tc.links[d], got[(k+1)%len(got)], "%d → next is a link", d)
				}
			}
			assert.Len(t, seen, len(tc.links), "every device once")
		})
	}
}

// TestFormatOrder: runs of three or more ranks up or down are written
// first-last, others one by one; ParseOrder reads back what FormatOrder
// writes, and lists with commas.
func TestFormatOrder(t *testing.T) {
	for _, tc := range []struct {
		order []int
		text  string
	}{
		{[]int{0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12}, "0-3 7-4 8-11 15-12"},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7, 14, 15, 12, 13}, "0-7 14 15 12 13"},
		{[]int{3}, "3"},
		{[]int{2, 0, 1}, "2 0 1"},
		{[]int{5, 4}, "5 4"},
	} {
		assert.Equal(t, tc.text, FormatOrder(tc.order))
		got, err := ParseOrder(tc.text)
		require.NoError(t, err)
		assert.Equal(t, tc.order, got)
	}
	got, err := ParseOrder("0,1, 2 ,3-5")
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, got)
	// An empty element between commas is refused by its place, as
	// --devices 2,,4 is (once dropped: "0,,1,2,3" read as 0-3).
	for _, tc := range []struct{ in, want string }{
		{"0,,1,2,3", "element 2 of 5 (between commas) is empty"},
		{",0,1,2,3", "element 1 of 5 (between commas) is empty"},
		{"0-3,", "element 2 of 2 (between commas) is empty"},
		{"0-1, ,2-3", "element 2 of 3 (between commas) is empty"},
		{" , ", "element 1 of 2 (between commas) is empty"},
	} {
		_, err := ParseOrder(tc.in)
		assert.ErrorContains(t, err, tc.want, "%q", tc.in)
	}
	got, err = ParseOrder("0-3  7-4\t8-11 , 15-12")
	require.NoError(t, err, "spaces and tabs separate, however many")
	assert.Equal(t, []int{0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12}, got)
	for _, bad := range []string{"", " , ", "x", "1-", "-1", "3-x", "4096", "0-4096", "+3", "0-+3", " 1 -2", "1e2", "0x3", "99999999999999999999"} {
		_, err := ParseOrder(bad)
		assert.Error(t, err, "%q", bad)
	}
}
