/* gcoll-info --trace: the flight recorder files of a communicator's ranks, read together into a
 * table and one line that says which rank stopped where, waiting on whom. */
#ifndef GCOLL_TOOLS_TRACE_H
#define GCOLL_TOOLS_TRACE_H

/* files: one per rank (gcoll_comm_dump's or GCOLL_FLIGHT_RECORDER's); prints the report, or why
 * a file cannot be read on stderr and returns 1. */
int print_trace(int nfiles, char **files);

#endif
