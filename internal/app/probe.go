package app

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Probe GETs url and returns an error unless it answers 200 within
// timeout (-probe: a health check for an image without curl).
func Probe(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s", url, res.Status)
	}
	return nil
}
