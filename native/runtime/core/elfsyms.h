/*
 * Writable data symbols of a 64-bit little-endian ELF image: the static and global arrays a
 * program keeps in .data/.bss. No allocation, no system calls: a pure walk over bytes the
 * caller mapped, unit-tested on its own.
 */
#ifndef OBJTIER_ELFSYMS_H
#define OBJTIER_ELFSYMS_H
#include <stddef.h>
#include <stdint.h>

/* Called per symbol: value = st_value (module-relative for PIE and shared objects, absolute
 * for a non-PIE executable), size in bytes, name (NUL-terminated, "" when unnamed).
 * A non-zero return stops the walk. */
typedef int (*rt_elf_symbol_fn)(uint64_t value, uint64_t size, const char *name, void *arg);

/* Every STT_OBJECT symbol of at least min_size bytes defined in an allocated, writable,
 * non-TLS section (.data, .bss and the like) — from .symtab when present, else .dynsym.
 * Aliases (several names at one address) are each reported. Returns the number of symbols
 * reported, or -1 when the image is not a 64-bit little-endian ELF file. */
int rt_elf_data_symbols(const void *image, size_t size, uint64_t min_size, rt_elf_symbol_fn fn,
                        void *arg);

#endif
