/*
 * The dashboard's files (web/), embedded in bso-server at build time by cmake/embed.cmake: the
 * page, its script and style, and the charting library that `npm ci` installed. A build
 * without npm embeds a placeholder for the library, and the page then shows tables only.
 */
#ifndef BSO_SERVER_UI_ASSETS_H
#define BSO_SERVER_UI_ASSETS_H

#include <stddef.h>

struct bso_ui_asset {
    const char *name; /* "index.html", "app.js", ... */
    const char *content_type;
    const unsigned char *data;
    size_t len;
};

/* The embedded file called name, or NULL. */
const struct bso_ui_asset *bso_ui_asset_find(const char *name);
/* All of them, *n set to the count (bso report inlines them). */
const struct bso_ui_asset *bso_ui_assets(size_t *n);

#endif
