"""PaTH, PaTH-FoX and FoX attention kernels (`fwd`, `prep`, `coarse`, `decode`, `fold`), the cache that drives
them (`cache`), the torch preparation and transport (`chunks`) and the float64 definition (`naive`)."""
