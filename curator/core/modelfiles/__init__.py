"""The GGUF models on this machine: found in each local-model tool's store, described from their
headers without loading them, and (with a project) compared by what each did there."""
