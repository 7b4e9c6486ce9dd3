# topology-extender on Node.js 24 LTS. The entrypoint is the CLI itself, so the same image runs in the chart (which
# passes `serve --in-cluster [settings]`) and locally, e.g.
#   docker run -p 8888:8888 -v "$PWD/examples:/data:ro" topology-extender:0.1.0 serve --cluster-state /data/cluster.yaml
# Build: docker build -t topology-extender:0.1.0 .   (or REGISTRY/topology-extender:0.1.0 to push)

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
# glibc's malloc returns blocks of 16 KiB and more to the kernel when freed: a burst's request bodies do not stay
# resident (README, Sizing memory). The chart's Deployment sets the same.
ENV MALLOC_MMAP_THRESHOLD_=16384
WORKDIR /app
COPY --from=source /app ./
RUN npm ci --omit=dev && npm cache clean --force
# 65532, the uid the chart runs as (podSecurityContext), rather than the base image's `node` user (1000): uid 1000 is
# the first human account on many hosts, whose files a process escaping the container would own. Node needs no
# passwd entry for it.
USER 65532:65532
# A container's loopback is its own: listen on every address unless a flag says otherwise (the chart's mode scheduler
# passes --host=127.0.0.1 so that only kube-scheduler beside it reaches the verbs).
ENV TOPOLOGY_EXTENDER_HOST=0.0.0.0
EXPOSE 8888
ENTRYPOINT ["node", "bin/topology-extender.js"]
CMD ["serve"]
