/* mcp_deploy.h: `abx mcp deploy`. */
#ifndef ABX_MCP_DEPLOY_H
#define ABX_MCP_DEPLOY_H

#include "cli.h"

typedef struct mcp_deploy_opts {
    const char *name, *region, *template_name, *token_file, *api_key, *custom_domain, *output_dir;
    unsigned memory_mb, timeout_s;
    bool generate_token, no_affinity;
} mcp_deploy_opts;

int mcp_deploy_write(cli_ctx *ctx, const mcp_deploy_opts *o);

#endif
