/* A data-parallel MLP in plain C trained with the gradient session on a synthetic regression task;
 * each layer's gradients start as soon as backprop produces them. Exits 0 only when the held-out
 * loss fell and every rank's parameters match bit for bit.
 *   mpirun -np 4 train_mlp [--compress none|fp16|bf16|topk:DENSITY] [--iters N] [--hidden H]
 *                          [--batch B] [--lr LR] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gcoll.h>

#define DIN 32
#define DOUT 8
#define TEACHER 64
#define NOISE 0.3f
#define EVAL 2048

typedef struct {
    int in, out;
    float *w, *b;   /* w[out][in] */
    float *gw, *gb; /* gradients, handed to the session */
    size_t idw, idb;
} layer_t;

/* Deterministic uniform in [-1, 1) from (a, b, c): every rank draws the same teacher and
 * held-out set, and its own training batches. */
static float urand(uint32_t a, uint32_t b, uint32_t c)
{
    uint64_t x = a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full ^ c * 0x165667B19E3779F9ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (float)((double)(uint32_t)(x >> 16) / 2147483648.0 - 1.0);
}

static float gauss(uint32_t a, uint32_t b, uint32_t c) /* roughly normal: a sum of uniforms */
{
    float s = 0;
    for (uint32_t k = 0; k < 6; k++)
        s += urand(a, b, c * 8 + k);
    return s / sqrtf(2.0f);
}

static float teacher_w1[TEACHER][DIN], teacher_w2[DOUT][TEACHER];

static void make_teacher(void)
{
    for (int j = 0; j < TEACHER; j++)
        for (int i = 0; i < DIN; i++)
            teacher_w1[j][i] = urand(1, (uint32_t)j, (uint32_t)i) * 0.6f;
    for (int o = 0; o < DOUT; o++)
        for (int j = 0; j < TEACHER; j++)
            teacher_w2[o][j] = urand(2, (uint32_t)o, (uint32_t)j) * 0.5f;
}

/* Sample s of stream (a, b): its input and noisy target. */
static void sample(uint32_t a, uint32_t b, uint32_t s, float *x, float *t)
{
    float h[TEACHER];
    for (int i = 0; i < DIN; i++)
        x[i] = urand(a, b, s * 64 + (uint32_t)i);
    for (int j = 0; j < TEACHER; j++) {
        float z = 0;
        for (int i = 0; i < DIN; i++)
            z += teacher_w1[j][i] * x[i];
        h[j] = tanhf(z);
    }
    for (int o = 0; o < DOUT; o++) {
        float y = 0;
        for (int j = 0; j < TEACHER; j++)
            y += teacher_w2[o][j] * h[j];
        t[o] = y + NOISE * gauss(a + 7, b, s * 64 + (uint32_t)o);
    }
}

static void layer_init(layer_t *l, int in, int out, int seed)
{
    l->in = in;
    l->out = out;
    l->w = malloc(sizeof(float) * (size_t)in * (size_t)out);
    l->gw = malloc(sizeof(float) * (size_t)in * (size_t)out);
    l->b = calloc((size_t)out, sizeof(float));
    l->gb = malloc(sizeof(float) * (size_t)out);
    float scale = sqrtf(6.0f / (float)in); /* He-uniform */
    for (size_t k = 0; k < (size_t)in * (size_t)out; k++)
        l->w[k] = urand(100 + (uint32_t)seed, (uint32_t)(k >> 20), (uint32_t)k) * scale;
}

/* y = W x + b for a batch, then ReLU unless last. */
static void forward(const layer_t *l, const float *x, float *y, int batch, int relu)
{
    for (int s = 0; s < batch; s++)
        for (int o = 0; o < l->out; o++) {
            const float *w = l->w + (size_t)o * (size_t)l->in, *xs = x + (size_t)s * (size_t)l->in;
            float z = l->b[o];
            for (int i = 0; i < l->in; i++)
                z += w[i] * xs[i];
            y[(size_t)s * (size_t)l->out + (size_t)o] = relu && z < 0 ? 0 : z;
        }
}

/* Gradients of l from dy (the loss's gradient at its output) and its input x; dx (may be NULL)
 * gets the gradient at the input, masked by the previous layer's ReLU (x > 0). */
static void backward(layer_t *l, const float *x, const float *dy, float *dx, int batch)
{
    memset(l->gw, 0, sizeof(float) * (size_t)l->in * (size_t)l->out);
    memset(l->gb, 0, sizeof(float) * (size_t)l->out);
    for (int s = 0; s < batch; s++)
        for (int o = 0; o < l->out; o++) {
            float d = dy[(size_t)s * (size_t)l->out + (size_t)o];
            float *gw = l->gw + (size_t)o * (size_t)l->in;
            const float *xs = x + (size_t)s * (size_t)l->in;
            for (int i = 0; i < l->in; i++)
                gw[i] += d * xs[i];
            l->gb[o] += d;
        }
    if (!dx)
        return;
    for (int s = 0; s < batch; s++)
        for (int i = 0; i < l->in; i++) {
            float g = 0;
            for (int o = 0; o < l->out; o++)
                g += l->w[(size_t)o * (size_t)l->in + (size_t)i] * dy[(size_t)s * (size_t)l->out + (size_t)o];
            dx[(size_t)s * (size_t)l->in + (size_t)i] = x[(size_t)s * (size_t)l->in + (size_t)i] > 0 ? g : 0;
        }
}

static double eval_loss(layer_t *L, const float *ex, const float *et, float *h1, float *h2, float *y)
{
    double sum = 0;
    for (int s0 = 0; s0 < EVAL; s0 += 256) {
        forward(&L[0], ex + (size_t)s0 * DIN, h1, 256, 1);
        forward(&L[1], h1, h2, 256, 1);
        forward(&L[2], h2, y, 256, 0);
        for (int k = 0; k < 256 * DOUT; k++) {
            double d = y[k] - et[(size_t)s0 * DOUT + (size_t)k];
            sum += d * d;
        }
    }
    return sum / (EVAL * DOUT);
}

static int parse_compress(const char *s, gcoll_compress_t *c, double *density)
{
    *density = 1;
    if (strcmp(s, "none") == 0)
        *c = GCOLL_COMPRESS_NONE;
    else if (strcmp(s, "fp16") == 0)
        *c = GCOLL_COMPRESS_FP16;
    else if (strcmp(s, "bf16") == 0)
        *c = GCOLL_COMPRESS_BF16;
    else if (strncmp(s, "topk:", 5) == 0) {
        char *end;
        *c = GCOLL_COMPRESS_TOPK;
        *density = strtod(s + 5, &end);
        return *end == '\0' && *density > 0 && *density <= 1 ? 0 : -1;
    } else
        return -1;
    return 0;
}

#define TRY(call)                                                                                          \
    do {                                                                                                   \
        gcoll_status_t st_ = (call);                                                                       \
        if (st_ != GCOLL_SUCCESS) {                                                                        \
            fprintf(stderr, "train_mlp: %s: %s: %s\n", #call, gcoll_status_name(st_), gcoll_last_error()); \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

int main(int argc, char **argv)
{
    TRY(gcoll_init(&argc, &argv));
    gcoll_comm_t world;
    TRY(gcoll_comm_world(&world));
    int rank = gcoll_comm_rank(world), n = gcoll_comm_size(world);
    int iters = 400, hidden = 256, batch = 32;
    float lr = 0.05f;
    gcoll_compress_t comp = GCOLL_COMPRESS_NONE;
    double density = 1;
    const char *comp_name = "none";
    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        int ok = v != NULL;
        if (ok && strcmp(argv[a], "--compress") == 0) {
            ok = parse_compress(v, &comp, &density) == 0;
            comp_name = v;
        } else if (ok && strcmp(argv[a], "--iters") == 0)
            ok = (iters = atoi(v)) > 0;
        else if (ok && strcmp(argv[a], "--hidden") == 0)
            ok = (hidden = atoi(v)) > 0;
        else if (ok && strcmp(argv[a], "--batch") == 0)
            ok = (batch = atoi(v)) > 0;
        else if (ok && strcmp(argv[a], "--lr") == 0)
            ok = (lr = strtof(v, NULL)) > 0;
        else
            ok = 0;
        if (!ok) {
            if (rank == 0)
                fprintf(stderr,
                        "usage: train_mlp [--compress none|fp16|bf16|topk:DENSITY] [--iters N] [--hidden H] "
                        "[--batch B] [--lr LR]\n");
            gcoll_finalize();
            return 2;
        }
        a++;
    }

    make_teacher();
    layer_t L[3];
    layer_init(&L[0], DIN, hidden, 0);
    layer_init(&L[1], hidden, hidden, 1);
    layer_init(&L[2], hidden, DOUT, 2);

    /* parameter sets in forward order; compression on the weight matrices */
    gcoll_session_t sess;
    TRY(gcoll_session_create(world, &sess));
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof(name), "w%d", k);
        TRY(gcoll_session_add(sess, name, (size_t)L[k].in * (size_t)L[k].out, GCOLL_FLOAT32, GCOLL_AVG, &L[k].idw));
        if (comp != GCOLL_COMPRESS_NONE)
            TRY(gcoll_session_set_compress(sess, L[k].idw, comp, density));
        snprintf(name, sizeof(name), "b%d", k);
        TRY(gcoll_session_add(sess, name, (size_t)L[k].out, GCOLL_FLOAT32, GCOLL_AVG, &L[k].idb));
    }
    TRY(gcoll_session_commit(sess));

    size_t hb = (size_t)(batch > 256 ? batch : 256) * (size_t)hidden;
    float *x = malloc(sizeof(float) * (size_t)batch * DIN), *t = malloc(sizeof(float) * (size_t)batch * DOUT);
    float *h1 = malloc(sizeof(float) * hb), *h2 = malloc(sizeof(float) * hb);
    float *y = malloc(sizeof(float) * 256 * DOUT), *dy = malloc(sizeof(float) * (size_t)batch * DOUT);
    float *d2 = malloc(sizeof(float) * hb), *d1 = malloc(sizeof(float) * hb);
    float *ex = malloc(sizeof(float) * EVAL * DIN), *et = malloc(sizeof(float) * EVAL * DOUT);
    for (int s = 0; s < EVAL; s++) /* held out: the same on every rank, never trained on */
        sample(999, 0, (uint32_t)s, ex + (size_t)s * DIN, et + (size_t)s * DOUT);

    double first = eval_loss(L, ex, et, h1, h2, y);
    if (rank == 0)
        printf("train_mlp: %d ranks, %d-%d-%d-%d MLP, batch %d per rank, lr %g, compress %s; held-out loss %.5f "
               "(noise floor %.5f)\n",
               n, DIN, hidden, hidden, DOUT, batch, lr, comp_name, first, NOISE * NOISE);
    for (int it = 0; it < iters; it++) {
        for (int s = 0; s < batch; s++)
            sample((uint32_t)rank + 1000, (uint32_t)it, (uint32_t)s, x + (size_t)s * DIN, t + (size_t)s * DOUT);
        forward(&L[0], x, h1, batch, 1);
        forward(&L[1], h1, h2, batch, 1);
        forward(&L[2], h2, y, batch, 0);
        for (int k = 0; k < batch * DOUT; k++)
            dy[k] = 2 * (y[k] - t[k]) / (float)(batch * DOUT);
        /* backprop, each layer's gradients on their way while the next layer down computes */
        backward(&L[2], h2, dy, d2, batch);
        TRY(gcoll_session_start(sess, L[2].idw, L[2].gw));
        TRY(gcoll_session_start(sess, L[2].idb, L[2].gb));
        backward(&L[1], h1, d2, d1, batch);
        TRY(gcoll_session_start(sess, L[1].idw, L[1].gw));
        TRY(gcoll_session_start(sess, L[1].idb, L[1].gb));
        backward(&L[0], x, d1, NULL, batch);
        TRY(gcoll_session_start(sess, L[0].idw, L[0].gw));
        TRY(gcoll_session_start(sess, L[0].idb, L[0].gb));
        TRY(gcoll_session_wait_all(sess));
        for (int k = 0; k < 3; k++) {
            for (size_t e = 0; e < (size_t)L[k].in * (size_t)L[k].out; e++)
                L[k].w[e] -= lr * L[k].gw[e];
            for (int e = 0; e < L[k].out; e++)
                L[k].b[e] -= lr * L[k].gb[e];
        }
        if (rank == 0 && ((it + 1) % (iters / 4 > 0 ? iters / 4 : 1) == 0))
            printf("iter %5d  held-out loss %.5f\n", it + 1, eval_loss(L, ex, et, h1, h2, y));
    }
    double last = eval_loss(L, ex, et, h1, h2, y);

    /* in sync: every rank's parameters hash the same (compared with gcoll's min and max) */
    uint64_t h = 1469598103934665603ull, lo, hi;
    for (int k = 0; k < 3; k++) {
        const unsigned char *p = (const unsigned char *)L[k].w;
        for (size_t e = 0; e < sizeof(float) * (size_t)L[k].in * (size_t)L[k].out; e++)
            h = (h ^ p[e]) * 1099511628211ull;
        p = (const unsigned char *)L[k].b;
        for (size_t e = 0; e < sizeof(float) * (size_t)L[k].out; e++)
            h = (h ^ p[e]) * 1099511628211ull;
    }
    TRY(gcoll_allreduce(&h, &lo, 1, GCOLL_UINT64, GCOLL_MIN, world));
    TRY(gcoll_allreduce(&h, &hi, 1, GCOLL_UINT64, GCOLL_MAX, world));
    int ok = lo == hi && last < first;
    if (rank == 0)
        printf("final held-out loss %.5f (from %.5f, noise floor %.5f), compress %s, ranks in sync: %s\n", last, first,
               NOISE * NOISE, comp_name, lo == hi ? "yes" : "NO");
    TRY(gcoll_session_free(&sess));
    for (int k = 0; k < 3; k++) {
        free(L[k].w);
        free(L[k].b);
        free(L[k].gw);
        free(L[k].gb);
    }
    free(x);
    free(t);
    free(h1);
    free(h2);
    free(y);
    free(dy);
    free(d2);
    free(d1);
    free(ex);
    free(et);
    gcoll_finalize();
    return ok ? 0 : 1;
}
