# shellcheck shell=bash
# Source this file (bash/zsh): . <repo>/.dev/ompi/env.sh
# Relocatable Open MPI 4.1.4 runtime (from Debian 12) for a single-node run.
# shellcheck disable=SC2296 # the fallback is zsh's way to name the sourced file
_ompi_src=${BASH_SOURCE[0]:-${(%):-%x}}
OMPI_BUNDLE=$(cd "$(dirname "$_ompi_src")" && pwd -P); unset _ompi_src
OMPI_REPO=$(cd "$OMPI_BUNDLE/../.." && pwd -P)
export OPAL_PREFIX=$OMPI_BUNDLE OPAL_EXEC_PREFIX=$OMPI_BUNDLE
export OPAL_BINDIR=$OMPI_BUNDLE/bin OPAL_SBINDIR=$OMPI_BUNDLE/bin OPAL_LIBEXECDIR=$OMPI_BUNDLE/bin
export OPAL_LIBDIR=$OMPI_BUNDLE/lib OPAL_PKGLIBDIR=$OMPI_BUNDLE/lib/openmpi3
export OPAL_DATAROOTDIR=$OMPI_BUNDLE/share OPAL_DATADIR=$OMPI_BUNDLE/share OPAL_PKGDATADIR=$OMPI_BUNDLE/share/openmpi
export OPAL_SYSCONFDIR=$OMPI_BUNDLE/etc OPAL_INCLUDEDIR=$OMPI_BUNDLE/include OPAL_PKGINCLUDEDIR=$OMPI_BUNDLE/include/openmpi
export PMIX_PREFIX=$OMPI_BUNDLE/pmix PMIX_EXEC_PREFIX=$OMPI_BUNDLE/pmix PMIX_LIBDIR=$OMPI_BUNDLE/pmix/lib
export PMIX_PKGLIBDIR=$OMPI_BUNDLE/pmix/lib/pmix PMIX_DATADIR=$OMPI_BUNDLE/pmix/share PMIX_PKGDATADIR=$OMPI_BUNDLE/pmix/share/pmix
export PATH=$OMPI_BUNDLE/bin${PATH:+:$PATH}
export LD_LIBRARY_PATH=$OMPI_REPO/lib:$OMPI_BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_osc=sm,rdma
export OMPI_MCA_plm=isolated                      # single node, never needs ssh/rsh
export OMPI_MCA_btl_vader_single_copy_mechanism=none   # CMA/ptrace often blocked in containers
export OMPI_MCA_rmaps_base_oversubscribe=1
# Debian-12 libstdc++/libgcc_s only if the target has none (Ubuntu 24.04 normally has newer ones)
if ! { /sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null; } | grep -q 'libstdc++\.so\.6 '; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$OMPI_BUNDLE/lib/fallback
fi
