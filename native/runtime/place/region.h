/* Code-region markers (region.c): the exported objtier_region_begin / objtier_region_end.
 * The public, program-side header is native/include/objtier/region.h. */
#ifndef OBJTIER_RT_REGION_H
#define OBJTIER_RT_REGION_H

void objtier_region_begin(const char *name);
void objtier_region_end(const char *name);

#endif
