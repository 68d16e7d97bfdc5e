"""eNMF: exterior nonnegative matrix factorization."""
