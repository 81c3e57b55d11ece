/* SPDX-License-Identifier: MIT */
/* The HTML report's script, style and chart library (tools/render/html/), built
 * into the tool so that a report needs no file beside it: each a
 * NUL-terminated string (html.c). */
	.section .rodata
#define ASSET(sym, file) \
	.global sym; .type sym, @object; sym: .incbin file; .byte 0; .size sym, . - sym
ASSET(gs_asset_uplot_js, "tools/render/html/uplot/uPlot.iife.min.js")
ASSET(gs_asset_uplot_css, "tools/render/html/uplot/uPlot.min.css")
ASSET(gs_asset_charts_js, "tools/render/html/charts.js")
ASSET(gs_asset_flame_js, "tools/render/html/flame.js")
ASSET(gs_asset_page_js, "tools/render/html/page.js")
ASSET(gs_asset_page_css, "tools/render/html/page.css")
	.section .note.GNU-stack, "", @progbits
