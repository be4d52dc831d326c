import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createKindApi } from './api';
import { App } from './App';
import './kind.css';

// The server sets these on <body> for wherever the panel is mounted:
// standalone `ironlens kind` → /api/v1; inside `ironlens serve` → /kind/api/v1.
const ds = document.body.dataset;
const api = createKindApi(ds.apiBase || '/api/v1');

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App api={api} docsUrl={ds.docsUrl || '/docs'} redocUrl={ds.redocUrl || '/redoc'} />
  </StrictMode>,
);
