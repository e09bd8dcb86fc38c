/* The flight recorder: each communicator's last operations (what was called, when it was called,
 * posted and ended, how, the round and the peers it still waited on), written as one JSON file
 * per rank by gcoll_comm_dump and, with GCOLL_FLIGHT_RECORDER, when the communicator fails;
 * gcoll-info --trace reads the ranks' files and says who stopped where. */
#ifndef GCOLL_FLIGHT_H
#define GCOLL_FLIGHT_H

#include "gcoll.h"

#define GCOLL_FLIGHT_SLOTS 256 /* operations kept per communicator: the newest */

typedef struct gcoll__flight gcoll__flight_t;

gcoll_status_t gcoll__flight_new(gcoll__flight_t **out);
void gcoll__flight_free(gcoll__flight_t *f);
/* The lane lock is held for these: */
void gcoll__flight_start(gcoll_request_t r);
void gcoll__flight_posted(gcoll_request_t r); /* its first message */
void gcoll__flight_end(gcoll_request_t r);    /* before its schedule goes */
/* comm just failed: writes its record where GCOLL_FLIGHT_RECORDER says, once. */
void gcoll__flight_failed(gcoll_comm_t comm);

#endif
