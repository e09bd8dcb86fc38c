/* gcoll-info's algorithms section (the registry: each collective's algorithms, Adasum's and
 * top-k's families, and their flags) and its selection section: the cost model's predicted time
 * of every algorithm per collective and size on a layout of hosts x ranks, and the built-in pick. */
#ifndef GCOLL_SELECT_TABLE_H
#define GCOLL_SELECT_TABLE_H

void print_algorithms(void);
void print_selection(int hosts, int ranks_per_host);

#endif
