/* gcoll-info's algorithms section (the registry: each collective's algorithms, Adasum's and
 * top-k's families, and their flags) and its selection section: the cost model's predicted time
 * of every algorithm per collective and size on a layout of hosts x ranks, and the built-in pick;
 * or the picks alone, with the time each took. */
#ifndef GCOLL_SELECT_TABLE_H
#define GCOLL_SELECT_TABLE_H

void print_algorithms(void);
void print_selection(int hosts, int ranks_per_host);
/* The built-in pick of every collective and size on hosts x ranks, and the milliseconds it took
 * to make (what a job's first call of that size class waits for). */
void print_picks(int hosts, int ranks_per_host);

#endif
