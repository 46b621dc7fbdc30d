package array

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusLevelNames pins the level and layout strings of the status JSON, which scripts read:
// the short level names --level takes, and a layout only for raid10.
func TestStatusLevelNames(t *testing.T) {
	want := map[string][2]string{ // arrayCase -> level, layout
		"linear-none-3x": {"linear", ""},
		"raid0-none-4x":  {"0", ""},
		"raid1-none-2x":  {"1", ""},
		"raid10-n2-4x":   {"10", "n2"},
		"raid10-n2-3x":   {"10", "n2"},
		"raid10-f2-4x":   {"10", "f2"},
		"raid10-o2-4x":   {"10", "o2"},
	}
	require.Len(t, arrayCases, len(want))
	for _, c := range arrayCases {
		t.Run(c.String(), func(t *testing.T) {
			w, ok := want[c.String()]
			require.True(t, ok, "no pinned names for %v", c)
			a, _ := createArray(t, c, "sync")
			defer a.Close()
			st := a.Status("", 0)
			assert.Equal(t, w, [2]string{st.Level, st.Layout})
			raw, err := json.Marshal(st)
			require.NoError(t, err)
			var fields map[string]any
			require.NoError(t, json.Unmarshal(raw, &fields))
			assert.Equal(t, w[0], fields["level"])
			if w[1] == "" {
				assert.NotContains(t, fields, "layout", "only raid10 has a layout")
			} else {
				assert.Equal(t, w[1], fields["layout"])
			}
		})
	}
}
