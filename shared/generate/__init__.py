"""The vendor traffic generator: a synthetic MySQL workload rendered in any vendor format."""
