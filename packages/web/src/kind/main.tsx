import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ConsoleToken } from '../shared/token';
import { App } from './App';
import { createKindApi } from './api';
import './kind.css';

// The server sets these on <body> for wherever the panel is mounted:
// standalone `ironlens kind` → /api/v1; inside `ironlens serve` → /kind/api/v1.
const ds = document.body.dataset;
// The console token (when the server asks for one) lives in this tab's sessionStorage.
const token = new ConsoleToken();
const api = createKindApi(ds.apiBase || '/api/v1', token);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App api={api} token={token} docsUrl={ds.docsUrl || '/docs'} redocUrl={ds.redocUrl || '/redoc'} />
  </StrictMode>,
);
