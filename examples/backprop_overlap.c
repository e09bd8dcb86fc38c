/* A data-parallel training step's communication pattern: backprop produces gradients from the
 * last layer to the first; each layer's allreduce starts as soon as its gradient exists, with a
 * higher priority for the layers the next forward pass needs first, and the step waits for all
 * of them before the optimizer runs. Every rank checks the averaged gradients.
 *   mpirun -np 4 build/default/bin/backprop_overlap */
#include <stdio.h>
#include <stdlib.h>

#include <gcoll.h>

#define LAYERS 6

static int fail(const char *what)
{
    fprintf(stderr, "backprop_overlap: %s: %s\n", what, gcoll_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    static const size_t sizes[LAYERS] = {1000, 65536, 300000, 4096, 262144, 10};
    gcoll_comm_t world;
    if (gcoll_init(&argc, &argv) != GCOLL_SUCCESS || gcoll_comm_world(&world) != GCOLL_SUCCESS)
        return fail("init");
    int rank = gcoll_comm_rank(world), size = gcoll_comm_size(world), bad = 0;
    float *grad[LAYERS];
    gcoll_request_t req[LAYERS];

    for (int step = 0; step < 3; step++) {
        for (int l = LAYERS - 1; l >= 0; l--) { /* backprop: the last layer first */
            grad[l] = malloc(sizes[l] * sizeof(float));
            for (size_t i = 0; i < sizes[l]; i++) /* stands in for the layer's backward pass */
                grad[l][i] = (float)(rank * (l + 1) + step);
            char name[32];
            snprintf(name, sizeof(name), "layer%d.grad", l);
            gcoll_attr_t attr = GCOLL_ATTR_INIT;
            attr.priority = LAYERS - l; /* the first layers are needed first next step */
            attr.name = name;
            if (gcoll_iallreduce(grad[l], grad[l], sizes[l], GCOLL_FLOAT32, GCOLL_AVG, world, &attr, &req[l]) !=
                GCOLL_SUCCESS)
                return fail("iallreduce");
        }
        for (int l = 0; l < LAYERS; l++) {
            if (gcoll_wait(&req[l]) != GCOLL_SUCCESS)
                return fail("wait");
            /* the mean over ranks of rank * (l + 1) + step */
            float want = (float)((size - 1) * (l + 1)) / 2 + (float)step;
            for (size_t i = 0; i < sizes[l]; i++)
                bad += grad[l][i] != want;
            free(grad[l]);
        }
    }
    if (rank == 0)
        printf("backprop_overlap: %d ranks, %d layers x 3 steps: %s\n", size, LAYERS, bad ? "WRONG" : "OK");
    gcoll_finalize();
    return bad ? 1 : 0;
}
