from django.urls import path

from config.jobs import views

urlpatterns = [
    path("jobs/<str:job_id>", views.JobDetailApi.as_view()),
]
