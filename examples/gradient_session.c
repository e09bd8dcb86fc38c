/* The gradient session as a data-parallel training loop uses it: register every parameter tensor
 * once in forward order, commit, then in each iteration start each gradient as backprop produces
 * it and wait for each layer's reduced gradient just before the optimizer step needs it.
 *   mpirun -np 4 build/default/bin/gradient_session */
#include <stdio.h>
#include <stdlib.h>

#include <gcoll.h>

#define LAYERS 8
#define STEPS 5

static const size_t layer_params[LAYERS] = {9408, 64, 36864, 64, 147456, 256, 524288, 1000};

/* Stands in for a layer's backward pass: a gradient every rank can also compute for checking. */
static void backward(float *grad, size_t n, int layer, int step, int rank)
{
    for (size_t i = 0; i < n; i++)
        grad[i] = (float)((rank + 1) * (layer + 1) + step) + (float)(i % 8);
}

int main(int argc, char **argv)
{
    if (gcoll_init(&argc, &argv) != GCOLL_SUCCESS) {
        fprintf(stderr, "gcoll_init: %s\n", gcoll_last_error());
        return 1;
    }
    gcoll_comm_t world;
    gcoll_comm_world(&world);
    int rank = gcoll_comm_rank(world), size = gcoll_comm_size(world);

    /* once: the parameter sets in forward order, averaged over the ranks */
    gcoll_session_t session;
    size_t id[LAYERS];
    float *grad[LAYERS] = {0};
    gcoll_status_t st = gcoll_session_create(world, &session);
    for (int l = 0; l < LAYERS && st == GCOLL_SUCCESS; l++) {
        char name[32];
        snprintf(name, sizeof(name), "layer%d", l);
        grad[l] = malloc(layer_params[l] * sizeof(float));
        st = gcoll_session_add(session, name, layer_params[l], GCOLL_FLOAT32, GCOLL_AVG, &id[l]);
    }
    if (st == GCOLL_SUCCESS)
        st = gcoll_session_commit(session); /* collective: plans buckets and priorities */
    size_t nbuckets = 0;
    if (st == GCOLL_SUCCESS)
        st = gcoll_session_buckets(session, &nbuckets);

    int bad = 0;
    for (int step = 0; step < STEPS && st == GCOLL_SUCCESS; step++) {
        /* backprop: the last layer's gradient is ready first; start each as soon as it is */
        for (int l = LAYERS - 1; l >= 0 && st == GCOLL_SUCCESS; l--) {
            backward(grad[l], layer_params[l], l, step, rank);
            st = gcoll_session_start(session, id[l], grad[l]);
        }
        /* optimizer step / next forward pass: the first layer is needed first */
        for (int l = 0; l < LAYERS && st == GCOLL_SUCCESS; l++) {
            st = gcoll_session_wait(session, id[l]);
            for (size_t i = 0; i < layer_params[l] && st == GCOLL_SUCCESS; i++) {
                /* the average over ranks of (r + 1)(l + 1) + step + i % 8 */
                double want = (size + 1) / 2.0 * (l + 1) + step + (double)(i % 8);
                bad += grad[l][i] != (float)want;
            }
        }
    }
    if (st != GCOLL_SUCCESS)
        fprintf(stderr, "rank %d: %s: %s\n", rank, gcoll_status_name(st), gcoll_last_error());
    else if (rank == 0)
        printf("gradient_session: %d ranks, %d layers in %zu buckets, %d steps: %s\n", size, LAYERS, nbuckets, STEPS,
               bad ? "WRONG" : "OK");
    gcoll_session_free(&session);
    for (int l = 0; l < LAYERS; l++)
        free(grad[l]);
    gcoll_finalize();
    return st != GCOLL_SUCCESS || bad;
}
