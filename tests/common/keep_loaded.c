/* Preloaded by tests/run.sh under the sanitizers: a dlclose that keeps every library mapped, so
 * that LeakSanitizer's reports still name Open MPI's components (unloaded at MPI_Finalize) and
 * tests/lsan.supp can match them with the fast unwinder. Test support only, never installed. */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
