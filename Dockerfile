# topology-extender on Node.js 24 LTS, as the chart runs it: `topology-extender serve --in-cluster [settings]`.
# Build: docker build -t REGISTRY/topology-extender:0.1.0 .

# Stage 1: only the files the server runs (no tests, benchmarks, chart or examples).
FROM node:24-slim AS source
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY bin/ bin/
COPY src/ src/

# Stage 2: the runtime. Production dependencies only: the image's own Node 24 runs the TypeScript sources, so the
# pinned `node` dev dependency (and every test tool) stays out.
FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=source /app ./
RUN npm ci --omit=dev && npm cache clean --force
# The base image's unprivileged `node` user, by number so that runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8888
ENTRYPOINT ["node", "bin/topology-extender.js", "serve", "--in-cluster"]
