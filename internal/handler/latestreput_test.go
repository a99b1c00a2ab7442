package handler_test

import "testing"

// An application that read a latest target and puts it back later with the _dnl and _dnk
// attributes it read, but not the attributes the rule copies (they are Denorm's, and the
// application does not know them): the put drops latestPrice while _dnl stays, and the
// target is recomputed, as when the put drops _dnl too.
func TestLatestTargetRePutWithItsReservedAttributes(t *testing.T) {
	e := newExtremeEnv(t)
	e.put(map[string]string{"pk": "PRODUCT#x", "sk": "PRODUCT"})
	e.drain(100, e.lambdaLike)
	e.offer("s1", "o1", "x", 30)
	e.offer("s2", "o2", "x", 10)
	e.drain(100, e.lambdaLike)
	read := e.get("PRODUCT#x", "PRODUCT")
	if read["latestPrice"] == nil || read["_dnl_product-latest-price"] == nil {
		t.Fatalf("before the re-put: %v", read)
	}
	put := map[string]string{"pk": "PRODUCT#x", "sk": "PRODUCT"}
	for _, a := range []string{"_dnl_product-latest-price", "_dnk_product-latest-price"} {
		put[a] = s(read[a])
	}
	e.put(put)
	e.drain(100, e.lambdaLike)
	e.checkExtremes()
}
