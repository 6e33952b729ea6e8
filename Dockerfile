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
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.REGISTRY_PORT || 8761) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Same command as `npm start`, without npm in between so signals reach the peer directly.
CMD ["node", "dist/main.js"]
