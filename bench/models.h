/* Layer tables of real models for `gcoll_bench train`: each parameter tensor's name and shape in
 * forward order (the order of PyTorch's named_parameters()), so the simulated backprop produces
 * gradients of the sizes and in the order a framework would. */
#ifndef GCOLL_BENCH_MODELS_H
#define GCOLL_BENCH_MODELS_H

#include <stddef.h>

#define BENCH_MAX_DIMS 4

typedef struct {
    const char *name;
    size_t dims[BENCH_MAX_DIMS]; /* unused trailing dimensions are 0 */
} bench_tensor_t;

typedef struct {
    const char *name;
    const char *source; /* what the table transcribes */
    const bench_tensor_t *tensors;
    size_t ntensors;
} bench_model_t;

/* "resnet50" or "bert"; NULL if unknown. */
const bench_model_t *bench_model_find(const char *name);
/* The product of a tensor's dimensions. */
size_t bench_tensor_numel(const bench_tensor_t *t);
/* The sum of every tensor's element count. */
size_t bench_model_params(const bench_model_t *m);

#endif
