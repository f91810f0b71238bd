"""The trial machinery: plan a matrix, fork a subject per trial, watch it, reap, one row each."""
