# syntax=docker/dockerfile:1
# Build stage: install everything, compile TypeScript and the dashboard into dist/ (npm ci runs
# `prepare` -> `npm run build`), then drop the dev dependencies.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json tsconfig.ui.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm ci && npm prune --omit=dev

# Runtime stage: compiled JavaScript and production dependencies only, as the non-root `node` user.
FROM node:20-slim
ENV NODE_ENV=production \
    REGISTRY_HOST=0.0.0.0 \
    REGISTRY_PORT=8761 \
    REGISTRY_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json cluster.example.json ./
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8761
# The probe reads the peer's own configuration, so it follows its port and speaks HTTPS when
# the peer serves TLS (REGISTRY_TLS_CERT / tls.certFile). /healthz needs no token.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "dist/cli/healthcheck.js"]
# It listens on 0.0.0.0, so it starts only with client tokens and peer authentication
# (REGISTRY_TOKENS, REGISTRY_CLUSTER_SECRET; docs/security.md) or REGISTRY_INSECURE=true.
# Same command as `npm start`, without npm in between so signals reach the peer directly; its
# Node flags are src/node-flags.ts's (8 MB young-generation semi-spaces, an old generation
# allowed 20% over what survived its last collection: docs/deployment.md).
CMD ["node", "--max-semi-space-size=8", "--heap-growing-percent=20", "dist/main.js"]
