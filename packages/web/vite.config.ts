import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// One Vite build for the whole console. Each page is an HTML entry; the servers serve
// `dist/<page>.html` with their own prefix rewritten in, and the assets under `/static/`,
// which is why every URL in the build is relative (`base: './'`).
export default defineConfig({
  root: import.meta.dirname,
  base: './',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: true,
    rolldownOptions: {
      input: { index: 'index.html', kind: 'kind.html' },
      output: {
        entryFileNames: 'js/[name].js',
        chunkFileNames: 'js/[name]-[hash].js',
        assetFileNames: 'assets/[name]-[hash][extname]',
      },
    },
  },
});
