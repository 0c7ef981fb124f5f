/* Writable data symbols of an ELF image in memory; see elfsyms.h.
 * Every offset and count read from the image is bounds-checked before use: a truncated or
 * corrupt file yields fewer symbols (or none), never a read outside the image. */
#define _GNU_SOURCE
#include "elfsyms.h"

#include <elf.h>
#include <string.h>

/* [off, off + len) lies inside an image of `size` bytes (no overflow). */
static int inside(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

int rt_elf_data_symbols(const void *image, size_t size, uint64_t min_size, rt_elf_symbol_fn fn,
                        void *arg)
{
    const unsigned char *b = image;
    if (!b || size < sizeof(Elf64_Ehdr) || memcmp(b, ELFMAG, SELFMAG) != 0 ||
        b[EI_CLASS] != ELFCLASS64 || b[EI_DATA] != ELFDATA2LSB)
        return -1;
    const Elf64_Ehdr *eh = image;
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 ||
        !inside(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), size))
        return -1;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
    /* the full symbol table when present (static symbols), else the dynamic one */
    const Elf64_Shdr *symtab = NULL;
    for (unsigned i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_type == SHT_SYMTAB)
            symtab = &sh[i];
    if (!symtab)
        for (unsigned i = 0; i < eh->e_shnum; i++)
            if (sh[i].sh_type == SHT_DYNSYM)
                symtab = &sh[i];
    if (!symtab || symtab->sh_entsize != sizeof(Elf64_Sym) || symtab->sh_link >= eh->e_shnum ||
        !inside(symtab->sh_offset, symtab->sh_size, size))
        return 0;
    const Elf64_Shdr *strtab = &sh[symtab->sh_link];
    if (!inside(strtab->sh_offset, strtab->sh_size, size) || strtab->sh_size == 0)
        return 0;
    const char *strings = (const char *)(b + strtab->sh_offset);
    const Elf64_Sym *syms = (const Elf64_Sym *)(b + symtab->sh_offset);
    uint64_t count = symtab->sh_size / sizeof(Elf64_Sym);
    int found = 0;
    for (uint64_t i = 1; i < count; i++) {
        const Elf64_Sym *s = &syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_OBJECT || s->st_size < min_size ||
            s->st_shndx == SHN_UNDEF || s->st_shndx >= eh->e_shnum)
            continue;
        const Elf64_Shdr *sec = &sh[s->st_shndx];
        uint64_t want = SHF_ALLOC | SHF_WRITE;
        if ((sec->sh_flags & want) != want || (sec->sh_flags & SHF_TLS))
            continue;
        if (s->st_value < sec->sh_addr || s->st_size > sec->sh_size ||
            s->st_value - sec->sh_addr > sec->sh_size - s->st_size)
            continue; /* not inside its section: corrupt */
        const char *name = "";
        if (s->st_name < strtab->sh_size &&
            memchr(strings + s->st_name, 0, strtab->sh_size - s->st_name))
            name = strings + s->st_name;
        found++;
        if (fn && fn(s->st_value, s->st_size, name, arg) != 0)
            break;
    }
    return found;
}
