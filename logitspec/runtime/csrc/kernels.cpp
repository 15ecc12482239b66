// The build's one translation unit: torch's headers, most of a build's time, are read once
// for the three kernels instead of once each (logitspec/runtime/fewrows.py compiles this file).
#include "few_linear.cpp"
#include "top_k.cpp"
#include "row_attention.cpp"
