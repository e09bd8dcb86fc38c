/* gcoll-info --simulate: each algorithm's time on a simulated network, size by size. */
#ifndef GCOLL_TOOLS_SIMULATE_H
#define GCOLL_TOOLS_SIMULATE_H

/* argv: the words after --simulate (the layout first); prints the table, or the usage on stderr
 * and returns 2. */
int print_simulation(int argc, char **argv);

#endif
