/* An intrusive FIFO of structs with a `next` field, for the transports' request queues: no
 * allocation on the message path. */
#ifndef GCOLL_QUEUE_H
#define GCOLL_QUEUE_H

#define Q_PUSH(head, tail, x)   \
    do {                        \
        (x)->next = NULL;       \
        if (tail)               \
            (tail)->next = (x); \
        else                    \
            (head) = (x);       \
        (tail) = (x);           \
    } while (0)

#endif
