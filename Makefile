# gcoll build. `make` builds lib/libgcoll.so and lib/libgcoll.a; `make test` runs every test;
# `make run` runs the benchmark demo; `make SAN=address|thread` builds a sanitizer variant under build/.
# Missing Debian packages are installed first by scripts/install-deps.sh.

# `make` alone builds all, whichever rule comes first below (the CUDA library's does, where nvcc is).
.DEFAULT_GOAL := all

PREFIX ?= /usr/local
MPICC ?= mpicc
SAN ?=

# Builds take every core (the test runner is one recipe: its lines still run one at a time).
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)

# Install what is missing before anything below asks pkg-config or mpicc about it.
ifeq ($(filter clean distclean,$(MAKECMDGOALS)),)
DEPS_RC := $(shell sh scripts/install-deps.sh >&2; echo $$?)
ifneq ($(DEPS_RC),0)
$(error scripts/install-deps.sh failed (exit $(DEPS_RC)); see its message above)
endif
endif

# Optional parts: on when found, off with OFI=0, HWLOC=0, CUDA=0.
OFI ?= $(shell pkg-config --exists libfabric 2>/dev/null && echo 1 || echo 0)
HWLOC ?= $(shell pkg-config --exists hwloc 2>/dev/null && echo 1 || echo 0)
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA ?= $(if $(NVCC),1,0)

VERSION := 0.2.0
SOMAJOR := 1

ifeq ($(SAN),)
BUILD := build/default
LIBDIR := lib
else ifeq ($(SAN),address)
BUILD := build/asan
LIBDIR := $(BUILD)/lib
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else ifeq ($(SAN),thread)
BUILD := build/tsan
LIBDIR := $(BUILD)/lib
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else
$(error SAN must be address or thread, not '$(SAN)')
endif
BINDIR := $(BUILD)/bin
OBJDIR := $(BUILD)/obj

CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(SANFLAGS) -Iinclude -Isrc
FEATURES := -DGCOLL_HAVE_OFI=$(OFI) -DGCOLL_HAVE_HWLOC=$(HWLOC) -DGCOLL_HAVE_CUDA=$(CUDA)
LIB_CFLAGS := $(BASE_CFLAGS) $(FEATURES) -fPIC -fvisibility=hidden
LDLIBS := -lpthread -lm -ldl
ifeq ($(OFI),1)
LIB_CFLAGS += $(shell pkg-config --cflags libfabric)
LDLIBS += $(shell pkg-config --libs libfabric)
endif
ifeq ($(HWLOC),1)
LIB_CFLAGS += $(shell pkg-config --cflags hwloc)
LDLIBS += $(shell pkg-config --libs hwloc)
endif

LIB_SRCS := $(wildcard src/*/*.c src/transports/*/*.c)
LIB_OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(LIB_SRCS))
SHLIB := $(LIBDIR)/libgcoll.so.$(VERSION)
STLIB := $(LIBDIR)/libgcoll.a

# CUDA kernels: a library of their own that libgcoll loads with dlopen (src/cuda/loader.c), so
# libgcoll itself never links libcudart. Every architecture this nvcc builds from Volta's
# successor on (CUDA 13 dropped sm_70/72) through Hopper, plus PTX for newer GPUs.
ifeq ($(CUDA),1)
CUDA_LIB := $(LIBDIR)/libgcoll_cuda.so
CUDA_ARCHS ?= 75 80 86 89 90
NVCC_FLAGS := -O3 -std=c++17 -Iinclude -Isrc -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Werror --cudart shared \
    $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
    -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
lib/libgcoll_cuda.so: src/cuda/kernels.cu src/cuda/rt_abi.h include/gcoll.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -shared -o $@ $<
ifneq ($(SAN),)
# nvcc's host code carries no sanitizer, so the sanitizer builds share the default build's kernels
$(CUDA_LIB): lib/libgcoll_cuda.so
	@mkdir -p $(dir $@)
	cp $< $@
endif
endif

UNIT_SRCS := $(wildcard tests/unit/*.c)
MPI_TESTS := $(patsubst tests/mpi/%.c,$(BINDIR)/%,$(filter-out tests/mpi/harness.c,$(wildcard tests/mpi/*.c)))
TOOLS := $(BINDIR)/gcoll-info
BENCH_SRCS := $(wildcard bench/*.c)
REF_SRCS := reference/reference.c reference/adasum_ref.c reference/vref.c
BENCH := $(BINDIR)/gcoll_bench
SETUP_BENCH := $(BINDIR)/gcoll_setup_bench
EXAMPLES := $(patsubst examples/%.c,$(BINDIR)/%,$(wildcard examples/*.c))

# The torch.distributed backend (bindings/torch/, loaded by gcoll.torch): built beside libgcoll
# where Debian's libtorch-dev, pybind11-dev, the Python headers and a C++ compiler are (not under
# the sanitizers: torch is not built with them).
PY_INC := $(shell /usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
ifeq ($(SAN)$(TORCH),)
ifneq ($(shell command -v $(CXX) 2>/dev/null),)
ifneq ($(wildcard /usr/include/torch/csrc/distributed/c10d/ProcessGroup.hpp),)
ifneq ($(wildcard /usr/include/pybind11/pybind11.h),)
ifneq ($(wildcard $(PY_INC)/Python.h),)
TORCH_BACKEND := $(LIBDIR)/gcoll_c10d.so
endif
endif
endif
endif
endif
TORCH_CXXFLAGS := -O2 -g -std=c++17 -fPIC -Wall -Wextra -Werror -D_GLIBCXX_USE_CXX11_ABI=1 -Iinclude \
	-isystem /usr/include/torch/csrc/api/include -isystem $(PY_INC)

.PHONY: all lib tests test test-quick test-full check-san check-tsan check-valgrind run install uninstall clean distclean
all: lib $(TOOLS) $(BENCH) $(SETUP_BENCH) $(EXAMPLES) $(LIBDIR)/libgcoll_mpi.so $(TORCH_BACKEND)
lib: $(SHLIB) $(STLIB) $(LIBDIR)/libgcoll.so $(CUDA_LIB)

# Vector kernels: the same template compiled per instruction set, chosen at run time.
$(OBJDIR)/src/base/reduce_generic.o: EXTRA := -O3
$(OBJDIR)/src/base/reduce_avx2.o: EXTRA := -O3 -mavx2 -mfma -mf16c
$(OBJDIR)/src/base/reduce_avx512.o: EXTRA := -O3 -mavx512f -mavx512bw -mavx512vl -mf16c -mfma -mprefer-vector-width=512
$(OBJDIR)/src/collectives/adasum_kernels.o: EXTRA := -O3

# -MMD: each object also depends on every header it includes.
$(OBJDIR)/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(LIB_CFLAGS) $(EXTRA) -MMD -MP -c $< -o $@

-include $(LIB_OBJS:.o=.d)

$(SHLIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(MPICC) -shared -Wl,-soname,libgcoll.so.$(SOMAJOR) -Wl,--no-undefined $(SANFLAGS) -o $@ $^ $(LDLIBS)

$(LIBDIR)/libgcoll.so: $(SHLIB)
	ln -sf libgcoll.so.$(VERSION) $(LIBDIR)/libgcoll.so.$(SOMAJOR)
	ln -sf libgcoll.so.$(VERSION) $@

$(STLIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBDIR)/gcoll_c10d.so: bindings/torch/process_group.cpp include/gcoll.h $(LIBDIR)/libgcoll.so
	$(CXX) $(TORCH_CXXFLAGS) -shared $< -o $@ -L$(LIBDIR) -Wl,-rpath,$(abspath $(LIBDIR)) -lgcoll \
	    -ltorch -ltorch_cpu -lc10 -ltorch_python

# Programs link the shared library, as users do; unit tests link the static one to reach
# internal functions.
PROG_LDFLAGS := -L$(LIBDIR) -Wl,-rpath,$(abspath $(LIBDIR)) -lgcoll $(SANFLAGS) $(LDLIBS)

$(BENCH): $(BENCH_SRCS) $(REF_SRCS) $(wildcard bench/*.h reference/*.h) $(LIBDIR)/libgcoll.so include/gcoll.h
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) -Ireference $(BENCH_SRCS) $(REF_SRCS) -o $@ $(PROG_LDFLAGS)

$(SETUP_BENCH): bench/setup/setup_time.c tests/common/sockets.h $(LIBDIR)/libgcoll.so include/gcoll.h
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) -Itests/common $< -o $@ $(PROG_LDFLAGS)

# gcoll-info reports what the internals see (topology, transport choices), so it links the static
# library like the transport tests below.
TOOL_SRCS := tools/select_table.c tools/layout.c tools/sim.c tools/simulate.c tools/trace.c
$(BINDIR)/gcoll-info: tools/gcoll_info.c $(TOOL_SRCS) $(STLIB) $(wildcard src/*/*.h src/transports/*/*.h tools/*.h)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) $(FEATURES) tools/gcoll_info.c $(TOOL_SRCS) -o $@ $(STLIB) $(SANFLAGS) $(LDLIBS)

# The test harness (tests/common/check.c) and the independent references (reference/), shared
# by every multi-rank test.
CHECK_SRCS := tests/common/check.c
TEST_COMMON := tests/mpi/harness.c $(CHECK_SRCS) $(REF_SRCS)
TEST_HEADERS := tests/mpi/harness.h tests/common/check.h tests/common/sockets.h reference/reference.h reference/adasum_ref.h reference/vref.h
TEST_INC := -Itests/mpi -Itests/common -Ireference
$(BINDIR)/%: tests/mpi/%.c $(TEST_COMMON) $(TEST_HEADERS) $(LIBDIR)/libgcoll.so
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) $(TEST_INC) $< $(TEST_COMMON) -o $@ $(PROG_LDFLAGS)

$(BINDIR)/%: examples/%.c $(LIBDIR)/libgcoll.so
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) $< -o $@ $(PROG_LDFLAGS)

# Transport-level tests reach the internal transport tables, so they link the static library.
$(BINDIR)/tp_%: tests/transport/%.c $(CHECK_SRCS) $(STLIB) $(wildcard tests/transport/*.h tests/common/*.h src/*/*.h src/transports/*/*.h)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) $(FEATURES) -Itests/common -Wno-missing-prototypes $< $(CHECK_SRCS) -o $@ \
	    $(STLIB) $(SANFLAGS) $(LDLIBS)

# Device buffers through the fake CUDA table: an internal hook, so the static library.
$(BINDIR)/test_cuda_fake: tests/cuda/test_cuda_fake.c tests/cuda/fake_cuda.c tests/cuda/fake_cuda.h $(TEST_COMMON) $(TEST_HEADERS) $(STLIB) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) $(FEATURES) $(TEST_INC) -Itests/cuda $< tests/cuda/fake_cuda.c $(TEST_COMMON) \
	    -o $@ $(STLIB) $(SANFLAGS) $(LDLIBS)

# Real GPU memory (skips where no GPU is visible); loads libcudart itself, with dlopen.
$(BINDIR)/test_cuda: tests/cuda/test_cuda.c $(TEST_COMMON) $(TEST_HEADERS) $(LIBDIR)/libgcoll.so
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) $(TEST_INC) $< $(TEST_COMMON) -o $@ $(PROG_LDFLAGS)

UNIT_BENCH := bench/metrics.c bench/options.c bench/models.c bench/compute.c tools/sim.c
$(BINDIR)/unit_tests: $(UNIT_SRCS) $(UNIT_BENCH) $(STLIB) tests/common/sockets.h $(wildcard tests/unit/*.h bench/*.h tools/*.h src/*/*.h src/transports/*/*.h)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) $(FEATURES) -DGCOLL_TEST_DATA='"$(abspath tests/data)"' -Ibench -Itools \
	    -Wno-missing-prototypes $(UNIT_SRCS) $(UNIT_BENCH) -o $@ $(STLIB) \
	    $(shell pkg-config --cflags --libs check) $(SANFLAGS) $(LDLIBS)

# The example transport plugin: built like an outside project, from the public headers only.
PLUGIN := $(BINDIR)/libgcoll_example_plugin.so
$(PLUGIN): examples/plugin/example_plugin.c include/gcoll_transport_plugin.h include/gcoll.h
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -std=c11 $(WARN) $(SANFLAGS) -Iinclude -shared -fPIC -fvisibility=hidden $< -o $@

# preloaded by tests/run.sh under the sanitizers; built without them, as mpirun loads it too
KEEP_LOADED := $(BINDIR)/libkeep_loaded.so
$(KEEP_LOADED): tests/common/keep_loaded.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=c11 $(WARN) -shared -fPIC $< -o $@

TP_TESTS := $(patsubst tests/transport/%.c,$(BINDIR)/tp_%,$(wildcard tests/transport/*.c))
tests: all $(BINDIR)/unit_tests $(MPI_TESTS) $(BINDIR)/test_cuda_fake $(BINDIR)/test_cuda $(TP_TESTS) $(PLUGIN) $(KEEP_LOADED) $(EXAMPLES) $(BINDIR)/readme_example \
    $(BINDIR)/test_interposer

# tests/manifest lists every test; tests/run.sh NAME... or -l LABEL runs a part of it.
RUN_TESTS = BINDIR=$(BINDIR) LIBDIR=$(LIBDIR) SAN=$(SAN) OFI=$(OFI) sh tests/run.sh
test: tests
	$(RUN_TESTS)
# every collective, dtype and op at 1-4 ranks, and the quick checks
test-quick: tests
	TEST_QUICK=1 $(RUN_TESTS) -l quick -n 4
# also the exhaustive collective matrix and the long soak
test-full: tests
	$(RUN_TESTS) -a

# cppcheck, shellcheck and clang-format (.clang-format) over the tree
.PHONY: lint
lint:
	sh scripts/lint.sh

# docs/env.md is generated from the configuration registry; tests/docs_env.sh checks it
.PHONY: docs
docs: docs/env.md
docs/env.md: $(BINDIR)/gcoll-info
	$(BINDIR)/gcoll-info --markdown > $@

check-san:
	$(MAKE) SAN=address test

check-tsan:
	$(MAKE) SAN=thread tests
	OFI=$(OFI) TOOL=tsan sh tests/check_tools.sh

check-valgrind: tests
	TOOL=valgrind sh tests/check_tools.sh

# The demo: allreduce from 4 B to 64 MiB on 2 ranks beside MPI, every iteration validated,
# the table on stdout and the plot in build/bench/.
run: all
	@mkdir -p build/bench
	mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 $(BINDIR)/gcoll_bench allreduce \
	    -m 4:64M -c --csv build/bench/allreduce.csv --json build/bench/allreduce.json
	sh bench/plot build/bench/allreduce.csv build/bench/allreduce.png

$(BINDIR)/readme_example: README.md $(LIBDIR)/libgcoll.so
	@mkdir -p $(BUILD)/readme
	sh tests/extract_readme_example.sh README.md > $(BUILD)/readme/readme_example.c
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) $(BUILD)/readme/readme_example.c -o $@ $(PROG_LDFLAGS)

# The MPI interposer (LD_PRELOAD): MPI_* definitions that call gcoll or PMPI. Its test program
# is a plain MPI program that knows nothing of gcoll.
$(LIBDIR)/libgcoll_mpi.so: $(wildcard interposer/*.c interposer/*.h) include/gcoll.h include/gcoll_mpi.h $(LIBDIR)/libgcoll.so
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) -shared -fPIC -Wl,--no-undefined $(filter %.c,$^) -o $@ $(PROG_LDFLAGS)

$(BINDIR)/test_interposer: tests/interposer/test_interposer.c $(CHECK_SRCS) tests/common/check.h
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(BASE_CFLAGS) -Itests/common $< $(CHECK_SRCS) -o $@ $(SANFLAGS) -lpthread -lm

# regenerated on every install: it records PREFIX, which may differ from the last one
.PHONY: gcoll.pc
gcoll.pc: gcoll.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@MPI_LIBS@|$(shell $(MPICC) --showme:link 2>/dev/null || $(MPICC) -link-info 2>/dev/null)|' \
	    -e 's|@LIBS@|$(strip $(LDLIBS))|' $< > $@

install: lib gcoll.pc $(TORCH_BACKEND)
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/gcoll.h include/gcoll_mpi.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(SHLIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libgcoll.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libgcoll.so.$(SOMAJOR)
	ln -sf libgcoll.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libgcoll.so
	install -m 644 $(STLIB) $(DESTDIR)$(PREFIX)/lib/
	$(if $(CUDA_LIB),install -m 755 $(CUDA_LIB) $(DESTDIR)$(PREFIX)/lib/)
	$(if $(TORCH_BACKEND),install -m 755 $(TORCH_BACKEND) $(DESTDIR)$(PREFIX)/lib/)
	install -m 644 gcoll.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/gcoll.h $(DESTDIR)$(PREFIX)/include/gcoll_mpi.h \
	    $(DESTDIR)$(PREFIX)/lib/libgcoll.* $(DESTDIR)$(PREFIX)/lib/gcoll_c10d.so $(DESTDIR)$(PREFIX)/lib/pkgconfig/gcoll.pc

clean:
	rm -rf build lib gcoll.pc
distclean: clean

# Multi-host cluster of network namespaces on this machine (tests/cluster/; needs root, else skips).
.PHONY: test-cluster bench-cluster
test-cluster: all $(BINDIR)/test_collectives $(BINDIR)/test_soak
	BINDIR=$(BINDIR) bash tests/cluster/run_tests.sh; rc=$$?; [ $$rc = 77 ] || exit $$rc
bench-cluster: all
	BINDIR=$(BINDIR) bash tests/cluster/bench.sh; rc=$$?; [ $$rc = 77 ] || exit $$rc

# ---- fuzzing (tests/fuzz/, README "Tests"): libFuzzer harnesses built with clang into build/fuzz.
# The objects that hold the fuzzed code are compiled there with clang, coverage and ASan+UBSan;
# the rest of what they reach (select.c's table names every algorithm) comes from the static
# library, so only what the harness needs is linked. `make fuzz` runs each harness FUZZ_SECONDS
# from its seed corpus (new inputs kept in build/fuzz/corpus) and fails on any crash, leak or
# broken property, the input left in build/fuzz/crashes/.
.PHONY: fuzz fuzz-build fuzz-clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD := build/fuzz
FUZZ_CC := OMPI_CC=clang $(MPICC)
FUZZ_CFLAGS := -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
    $(filter-out $(SANFLAGS),$(LIB_CFLAGS))
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_PARSERS := $(patsubst %,$(FUZZ_BUILD)/obj/%.o,src/base/config src/base/error src/base/log src/collectives/select)

fuzz-clang:
	@command -v clang >/dev/null && [ -f "$$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] || \
	    { echo "make fuzz: needs clang and its libFuzzer runtime (scripts/install-deps.sh installs clang and libclang-rt-14-dev as root)" >&2; exit 1; }

$(FUZZ_BUILD)/obj/%.o: %.c Makefile | fuzz-clang
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

-include $(wildcard $(FUZZ_BUILD)/obj/*/*/*.d $(FUZZ_BUILD)/obj/*/*/*/*.d)

$(FUZZ_BUILD)/bin/fuzz_config $(FUZZ_BUILD)/bin/fuzz_select: $(FUZZ_PARSERS)
$(FUZZ_BUILD)/bin/fuzz_tcp_wire: $(FUZZ_BUILD)/obj/src/transports/tcp/tcp_wire.o
$(FUZZ_BUILD)/bin/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(STLIB) | fuzz-clang
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-missing-prototypes -fsanitize=fuzzer $< $(filter %.o,$^) -o $@ $(STLIB) $(LDLIBS)

fuzz-build: $(patsubst %,$(FUZZ_BUILD)/bin/fuzz_%,$(FUZZ_NAMES))

fuzz: fuzz-build
	@for f in $(FUZZ_NAMES); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$f $(FUZZ_BUILD)/crashes; \
	    echo "fuzz_$$f: $(FUZZ_SECONDS) s"; \
	    $(FUZZ_BUILD)/bin/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_BUILD)/crashes/$$f- $(FUZZ_BUILD)/corpus/$$f tests/fuzz/corpus/$$f \
	        > $(FUZZ_BUILD)/fuzz_$$f.log 2>&1 || { tail -40 $(FUZZ_BUILD)/fuzz_$$f.log; exit 1; }; \
	    grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' $(FUZZ_BUILD)/fuzz_$$f.log | tr '\n' ' '; echo; \
	done

# ---- soak (tests/mpi/test_soak.c, README "Tests"): the long run, minutes, not in CI: SOAK_ITERS
# operations at 8 ranks over shm, then a fifth of them at 4 ranks over tcp.
.PHONY: soak
SOAK_ITERS ?= 10000
soak: $(BINDIR)/test_soak
	mpirun --allow-run-as-root --oversubscribe --bind-to none -np 8 -x SOAK_ITERS=$(SOAK_ITERS) $(BINDIR)/test_soak
	mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 -x SOAK_ITERS=$$(($(SOAK_ITERS) / 5)) \
	    -x GCOLL_TRANSPORT_INTRA=inter -x GCOLL_TRANSPORT_INTER=tcp $(BINDIR)/test_soak
